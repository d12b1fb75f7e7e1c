import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import VigilEvents
import VigilHex
import VigilHubProtocol
import VigilTrust

/// The JSON the sync routes read and write: bounded decoding, refusals and answers.
extension SyncRoutes {
    /// A refusal already made into a response.
    struct Refused: Error {
        let response: Response
        init(_ response: Response) { self.response = response }
    }

    /// An upload's body: the binary batch a box sends (`application/x-protobuf`), or the JSON
    /// document (anything else; tools and the API check use it).
    static func decodeBatch(_ request: Request) async -> Result<UploadBatch, Refused> {
        guard let type = request.headers[.contentType], type.lowercased().hasPrefix(UploadBatch.protobufContentType) else {
            return await decode(UploadBatch.self, request, limit: maxUploadBytes)
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: maxUploadBytes)
        } catch {
            return .failure(Refused(refuse(.contentTooLarge, "too_large", "the body is over \(maxUploadBytes) bytes")))
        }
        do {
            return .success(try UploadBatch(protobuf: Array(body.readableBytesView)))
        } catch {
            return .failure(Refused(refuse(.badRequest, "bad_body", "the body is not a binary upload batch: \(error)")))
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ request: Request, limit: Int) async -> Result<T, Refused> {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: limit)
        } catch {
            return .failure(Refused(refuse(.contentTooLarge, "too_large", "the body is over \(limit) bytes")))
        }
        do {
            return .success(try JSONDecoder().decode(T.self, from: Data(body.readableBytesView)))
        } catch {
            return .failure(Refused(refuse(.badRequest, "bad_json", "the body is not a valid \(T.self): \(error)")))
        }
    }

    static func refuse(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> Response {
        json(Refusal(error: code, message: message), status: status)
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(value)) ?? Data(#"{"error":"internal","message":"cannot encode the answer"}"#.utf8)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
