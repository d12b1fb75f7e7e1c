import Foundation
import Logging
import NIOSSL
import VigilHubProtocol
import VigilSystem

/// The hub's TLS identity: a self-signed certificate made at first start (`DATA/tls/hub.crt`,
/// ECDSA P-256, ten years) and its key (`DATA/tls/hub.key`, 0600). Boxes pin it: an enrolment
/// token carries the certificate's SHA-256, and a box trusts only that certificate from then on.
/// Why self-signed and pinned: a shelter network has no DNS name a public CA would sign and may
/// have no Internet at all; pinning needs neither.
public struct HubIdentity: Sendable {
    public let certificatePEM: String
    public let keyPath: String
    public let certificatePath: String
    /// SHA-256 of the certificate's DER bytes, hex.
    public let fingerprint: String

    /// Loads the identity from `DATA/tls`, making it first if it is not there.
    public static func loadOrCreate(dataDirectory: String, logger: Logger) throws(HubError) -> HubIdentity {
        let directory = dataDirectory + "/tls"
        let certificate = directory + "/hub.crt"
        let key = directory + "/hub.key"
        let files = FileManager.default
        if !files.fileExists(atPath: certificate) || !files.fileExists(atPath: key) {
            do {
                try files.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw .setup("cannot make \(directory): \(error)")
            }
            logger.info("hub: making the TLS certificate", metadata: ["path": "\(certificate)"])
            let outputPath = directory + "/openssl.out"
            defer { unlink(outputPath) }
            let status: Int32
            do {
                status = try runToCompletion(path: "/usr/bin/openssl", arguments: [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "3650", "-subj", "/CN=vigil-hub", "-keyout", key + ".new", "-out", certificate + ".new",
                ], outputPath: outputPath)
            } catch {
                throw .setup("cannot run openssl (scripts/setup installs it): \(error)")
            }
            guard status == 0 else {
                throw .setup("openssl could not make the certificate: \((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")")
            }
            chmod(key + ".new", 0o600)
            // Key first: a certificate without its key would never be replaced.
            guard rename(key + ".new", key) == 0, rename(certificate + ".new", certificate) == 0 else {
                throw .setup("cannot move the new certificate into \(directory)")
            }
        }
        guard let pem = try? String(contentsOfFile: certificate, encoding: .utf8) else {
            throw .setup("cannot read \(certificate)")
        }
        guard let fingerprint = CertificateFingerprint.of(pem: pem) else { throw .setup("\(certificate) is not a PEM certificate") }
        return HubIdentity(certificatePEM: pem, keyPath: key, certificatePath: certificate, fingerprint: fingerprint)
    }

    /// The server's TLS configuration.
    public func serverTLS() throws(HubError) -> TLSConfiguration {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificatePath).map { NIOSSLCertificateSource.certificate($0) }
            let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
            return TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
        } catch {
            throw .setup("cannot load the TLS certificate: \(error)")
        }
    }
}
