/// Why the hub cannot start or go on.
public enum HubError: Error, CustomStringConvertible, Sendable {
    /// The machine lacks something (PostgreSQL, openssl) or a directory cannot be made.
    case setup(String)
    /// The configuration says something impossible.
    case configuration(String)
    /// The database refused or failed.
    case database(String)

    public var description: String {
        switch self {
        case .setup(let s): "setup: \(s)"
        case .configuration(let s): "configuration: \(s)"
        case .database(let s): "database: \(s)"
        }
    }
}
