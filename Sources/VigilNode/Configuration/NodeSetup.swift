import Foundation
import VigilAccess
import VigilBoard
import VigilCore
import VigilHubProtocol
import VigilRadio
import VigilSystem

/// What `vigil setup` asks a volunteer, each answer checked the moment it is given, and how the
/// answers go into the configuration file (docs/install.md "First start").
///
/// Every `check` returns the value as it will be written (normalised: a phone number in E.164,
/// a location without spaces) or throws a `SetupRefusal` that says what was expected. `apply`
/// edits the file's text (`ConfigFileEdit`: comments and other settings stay), then reads the
/// result as the node will and compares it with the answers, so a file is only ever written
/// whole and right.
public struct NodeSetup: Sendable, Equatable {
    /// Nil: not asked (left as the file has it).
    public var board: String?
    /// The radio: a BlueZ adapter (hci0, or its address), or "sim".
    public var radio: String?
    public var siteName: String?
    public var siteLocation: String?
    /// The staff's phone numbers, E.164.
    public var staff: [String]?
    /// The notifier's command (an absolute path); "" for none.
    public var notifier: String?
    /// The page's HOST:PORT; "" for no page.
    public var pageListen: String?

    public init() {}

    /// The longest site name: it goes into every text message the box sends.
    public static let siteNameLimit = 64

    // MARK: Checking each answer

    /// A board profile that exists: a name looked up as the node looks it up next to `configFile`,
    /// or a path to one.
    public static func checkBoard(_ text: String, configFile: String) throws(SetupRefusal) -> String {
        let name = text.trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { throw SetupRefusal("a board profile is needed (sim, rpi4, rpi5, zero2w, or a path to one)") }
        let found: String?
        do {
            found = try NodeConfiguration.boardFile(named: name, relativeTo: (configFile as NSString).deletingLastPathComponent)
            if let found { _ = try NodeConfiguration.loadBoard(named: found) }
        } catch let error as ConfigurationError {
            throw SetupRefusal("unknown board profile \"\(name.prefix(64))\": \(error.message)")
        } catch {
            throw SetupRefusal("unknown board profile \"\(name.prefix(64))\": \(error)")
        }
        // A path is written absolute, and so is a name found only beside the working directory
        // (`board/NAME.yaml`): the service does not run where setup did. `sim` it always finds.
        if let found, name.hasSuffix(".yaml") || name.contains("/") || (!found.hasPrefix("/") && name != "sim") {
            return URL(fileURLWithPath: found).standardizedFileURL.path
        }
        return name
    }

    /// Whether `board` (as `checkBoard` returned it) is the simulated board, by its chip: a copy of
    /// the sim profile under another name is still simulated.
    public static func isSimulated(board: String, configFile: String) -> Bool {
        let profile = try? NodeConfiguration.loadBoard(named: board, relativeTo: (configFile as NSString).deletingLastPathComponent)
        return profile?.chip == BoardProfile.simulated.chip
    }

    /// The radio adapter for `board`: a name (hci0) or an address, or `sim` only with the
    /// simulated board. A simulated radio on a real box would hear nobody and fill the log with
    /// people who are not there.
    public static func checkRadio(_ text: String, boardIsSimulated: Bool) throws(SetupRefusal) -> String {
        let radio = text.trimmingCharacters(in: .whitespaces)
        guard radio == "sim" || isAdapterSelector(radio) else {
            throw SetupRefusal("the radio is a Bluetooth adapter's name (hci0) or address (AA:BB:CC:DD:EE:FF), or sim")
        }
        if radio == "sim", !boardIsSimulated {
            throw SetupRefusal("a simulated radio on a real board hears nobody: give its adapter (hci0; `ls /sys/class/bluetooth` lists them)")
        }
        return radio
    }

    public static func checkSiteName(_ text: String) throws(SetupRefusal) -> String {
        let name = text.trimmingCharacters(in: .whitespaces)
        guard name.count <= siteNameLimit else { throw SetupRefusal("the site's name is at most \(siteNameLimit) characters (it goes into every message)") }
        // Controls and format characters (bidirectional overrides among them) would make a
        // message read differently from what the volunteer typed.
        guard !name.unicodeScalars.contains(where: { [.control, .format, .lineSeparator, .paragraphSeparator].contains($0.properties.generalCategory) }) else {
            throw SetupRefusal("the site's name has control or formatting characters")
        }
        return name
    }

    /// "LATITUDE,LONGITUDE" in degrees, or "" for none.
    public static func checkLocation(_ text: String) throws(SetupRefusal) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty { return "" }
        guard let location = NodeConfiguration.parseLocation(trimmed) else {
            throw SetupRefusal("a place is LATITUDE,LONGITUDE in degrees, such as -33.8688,151.2093")
        }
        return location
    }

    /// Phone numbers, separated by commas, in international form; "none" for none.
    public static func checkStaff(_ text: String) throws(SetupRefusal) -> [String] {
        if text.trimmingCharacters(in: .whitespaces) == "none" { return [] }
        let parts = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard parts.count <= 32 else { throw SetupRefusal("at most 32 staff numbers") }
        var numbers: [String] = []
        for part in parts {
            let address: ContactAddress
            do {
                address = try ContactAddress.parse(part)
            } catch {
                throw SetupRefusal("\(error)")
            }
            guard address.isPhone else {
                throw SetupRefusal("\"\(part.prefix(64))\" is not a phone number: staff are texted and called, in international form (+34 600 111 222)")
            }
            if !numbers.contains(address.text) { numbers.append(address.text) }
        }
        return numbers
    }

    /// An executable notifier command by absolute path, or "none" (or "") for none.
    public static func checkNotifier(_ text: String) throws(SetupRefusal) -> String {
        let path = text.trimmingCharacters(in: .whitespaces)
        if path.isEmpty || path == "none" { return "" }
        guard path.hasPrefix("/") else { throw SetupRefusal("the notifier is an absolute path, such as /usr/share/vigil/notify/vigil-notify-sms, or none") }
        guard FileSystem.exists(path) else { throw SetupRefusal("there is no notifier at \(path.prefix(200))") }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
              access(path, X_OK) == 0 else { throw SetupRefusal("\(path.prefix(200)) is not executable") }
        return path
    }

    /// HOST:PORT for the box's page, or "" for no page.
    public static func checkPageListen(_ text: String) throws(SetupRefusal) -> String {
        let listen = text.trimmingCharacters(in: .whitespaces)
        if listen.isEmpty || listen == "none" { return "" }
        guard HTTPSettings.parseListen(listen) != nil else { throw SetupRefusal("the page's address is HOST:PORT, such as 0.0.0.0:8443, or none") }
        return listen
    }

    /// The admin password for the page: long enough to resist guessing.
    public static func checkPassword(_ text: String) throws(SetupRefusal) -> String {
        guard text.count >= PasswordHash.minimumLength else {
            throw SetupRefusal("the admin password needs at least \(PasswordHash.minimumLength) characters")
        }
        guard text.utf8.count <= 256 else { throw SetupRefusal("the admin password is longer than 256 bytes") }
        return text
    }

    /// A hub's address: https://HOST[:PORT] (the box trusts only the certificate its token names).
    public static func checkHubURL(_ text: String) throws(SetupRefusal) -> String {
        let url = text.trimmingCharacters(in: .whitespaces)
        guard url.lowercased().hasPrefix("https://"), let host = URL(string: url)?.host, !host.isEmpty else {
            throw SetupRefusal("a hub's address is https://HOST:PORT (a plain http:// hub is refused: the box's credential would cross the network in clear)")
        }
        return url
    }

    // MARK: Writing them

    /// These answers without the ones `config` already holds (a value kept keeps its line as it
    /// was); `answered` names what is left.
    public func changes(from config: NodeConfiguration) -> NodeSetup {
        var left = self
        if board == config.boardName { left.board = nil }
        if radio == config.radio { left.radio = nil }
        if siteName == config.projections.ladder.siteName { left.siteName = nil }
        if siteLocation == config.projections.ladder.siteLocation { left.siteLocation = nil }
        if staff == config.projections.ladder.staff { left.staff = nil }
        if notifier == (config.notifier.command ?? "") { left.notifier = nil }
        if pageListen == (config.http.listen ?? "") { left.pageListen = nil }
        return left
    }

    /// The settings answered, by their names in the file.
    public var answered: [String] {
        [(board != nil, "board"), (radio != nil, "radio.adapter"), (siteName != nil, "site.name"), (siteLocation != nil, "site.location"),
         (staff != nil, "notify.staff"), (notifier != nil, "notify.command"), (pageListen != nil, "http.listen")]
            .filter(\.0).map(\.1)
    }

    /// The file's `text` with the answers set; `file` names it in messages and places board
    /// names. Throws when the file cannot be edited safely or the result would not read back as
    /// the answers.
    public func apply(to text: String, file: String) throws -> String {
        var edit = ConfigFileEdit(text: text)
        if let board { try edit.set("board", to: ConfigFileEdit.scalar(board)) }
        if let radio { try edit.set("radio", "adapter", to: ConfigFileEdit.scalar(radio)) }
        if let siteName { try edit.set("site", "name", to: ConfigFileEdit.scalar(siteName)) }
        if let siteLocation { try edit.set("site", "location", to: ConfigFileEdit.scalar(siteLocation)) }
        if let staff { try edit.set("notify", "staff", to: ConfigFileEdit.list(staff)) }
        if let notifier {
            // No notifier is no `command:` (an empty one is not a path the node accepts).
            if notifier.isEmpty { try edit.remove("notify", "command") } else { try edit.set("notify", "command", to: ConfigFileEdit.scalar(notifier)) }
        }
        if let pageListen { try edit.set("http", "listen", to: ConfigFileEdit.scalar(pageListen)) }
        let result = edit.text
        let differs = changes(from: try NodeConfiguration.load(text: result, file: file)).answered
        guard differs.isEmpty else {
            throw SetupRefusal("the edited file would not read back as answered (\(differs.joined(separator: ", "))); nothing was written")
        }
        return result
    }
}

/// An answer `vigil setup` cannot take, and why: said to the volunteer, who answers again.
public struct SetupRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
