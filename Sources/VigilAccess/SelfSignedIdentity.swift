import Foundation
import Logging
import NIOSSL
import VigilHubProtocol
import VigilSystem

/// A server's TLS identity: a self-signed certificate made the first time it is needed
/// (`DIRECTORY/NAME.crt`, ECDSA P-256, ten years) and its key (`DIRECTORY/NAME.key`, 0600).
/// Clients pin it by its SHA-256 fingerprint, which the server's owner reads from a trusted place
/// (an enrolment token for the hub; `vigil status` on the box's own console for the box's page).
///
/// Why self-signed: a shelter network has no DNS name a public CA would sign and may have no
/// Internet at all; pinning (or a browser's one-time exception checked against the fingerprint)
/// needs neither.
public struct SelfSignedIdentity: Sendable {
    public let certificatePEM: String
    public let keyPath: String
    public let certificatePath: String
    /// SHA-256 of the certificate's DER bytes, hex.
    public let fingerprint: String

    /// Loads the identity from `directory`, making it first if it is not there. `commonName`
    /// goes in the certificate's subject (browsers show it).
    public static func loadOrCreate(directory: String, name: String, commonName: String,
                                    logger: Logger) throws(AccessError) -> SelfSignedIdentity {
        let certificate = directory + "/" + name + ".crt"
        let key = directory + "/" + name + ".key"
        let files = FileManager.default
        if !files.fileExists(atPath: certificate) || !files.fileExists(atPath: key) {
            do {
                try files.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw .setup("cannot make \(directory): \(error)")
            }
            logger.info("making a self-signed TLS certificate", metadata: ["path": "\(certificate)"])
            let outputPath = directory + "/openssl.out"
            defer { unlink(outputPath) }
            let status: Int32
            do {
                status = try runToCompletion(path: "/usr/bin/openssl", arguments: [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "3650", "-subj", "/CN=\(commonName)", "-keyout", key + ".new", "-out", certificate + ".new",
                ], outputPath: outputPath)
            } catch {
                throw .setup("cannot run openssl (scripts/setup installs it): \(error)")
            }
            guard status == 0 else {
                throw .setup("openssl could not make the certificate: \((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")")
            }
            chmod(key + ".new", 0o600)
            // Key first: a certificate without its key would never be replaced.
            do throws(SystemError) {
                try FileSystem.moveIntoPlace(key + ".new", over: key)
                try FileSystem.moveIntoPlace(certificate + ".new", over: certificate)
            } catch {
                throw .setup("cannot move the new certificate into \(directory): \(error)")
            }
        }
        return try load(certificatePath: certificate, keyPath: key)
    }

    /// The identity already made, without making one (nil when there is none yet).
    public static func existing(directory: String, name: String) -> SelfSignedIdentity? {
        try? load(certificatePath: directory + "/" + name + ".crt", keyPath: directory + "/" + name + ".key")
    }

    private static func load(certificatePath: String, keyPath: String) throws(AccessError) -> SelfSignedIdentity {
        guard let pem = try? String(contentsOfFile: certificatePath, encoding: .utf8) else {
            throw .setup("cannot read \(certificatePath)")
        }
        guard let fingerprint = CertificateFingerprint.of(pem: pem) else { throw .setup("\(certificatePath) is not a PEM certificate") }
        return SelfSignedIdentity(certificatePEM: pem, keyPath: keyPath, certificatePath: certificatePath, fingerprint: fingerprint)
    }

    /// The server's TLS configuration: TLS 1.2 or newer (1.0 and 1.1 are deprecated, RFC 8996;
    /// every browser and the boxes speak 1.2 or 1.3).
    public func serverTLS() throws(AccessError) -> TLSConfiguration {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificatePath).map { NIOSSLCertificateSource.certificate($0) }
            let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
            configuration.minimumTLSVersion = .tlsv12
            return configuration
        } catch {
            throw .setup("cannot load the TLS certificate: \(error)")
        }
    }
}

/// What went wrong setting up access (certificates, password files, tokens).
public enum AccessError: Error, CustomStringConvertible, Equatable {
    case setup(String)

    public var description: String {
        switch self {
        case .setup(let s): s
        }
    }
}
