// A session service keeps alice's device list current and a requester waits for a login
// approval, against a running `authledger serve`:
//   AUTHLEDGER_URL=http://127.0.0.1:8080 AUTHLEDGER_TOKEN=… swift run ServiceClient
import AuthLedgerClient
import Foundation

let env = ProcessInfo.processInfo.environment
let client = AuthLedgerClient(baseURL: env["AUTHLEDGER_URL"] ?? "http://127.0.0.1:8080", token: env["AUTHLEDGER_TOKEN"])

do {
    let devices = try await client.devices("alice")
    print(devices.position, devices.devices.map(\.deviceId), devices.cooling.active)
    // The answer now, then each change; the stream reconnects by itself (Last-Event-ID).
    var updates = 0
    for try await u in client.watch(devices: ["alice"], pending: ["alice"]) {
        print(u.kind, u.projection, u.position, u.answer.serialized())
        updates += 1
        if updates == 2 { break }
    }
} catch let e as AuthLedgerClientError {
    print("refused: \(e.code) (\(e.status)): \(e.message)")
    exit(1)
} catch {
    print("error: \(error)")   // no server there, say
    exit(1)
}
