import Foundation

/// An `application/x-www-form-urlencoded` body's fields (the last of a repeated name wins); nil
/// when a name or value is not valid percent-encoding. The pages of the box and the hub take
/// their forms through this.
public enum FormFields {
    public static func parse(_ body: String) -> [String: String]? {
        var out: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = parts.first.flatMap({ String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding }) else { return nil }
            let value = parts.count > 1 ? String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding : ""
            guard let value else { return nil }
            out[name] = value
        }
        return out
    }
}
