// An authentication service's device memory, in process: open the ledger on an LMDB
// directory, perform commands, answer "which devices does this user trust?".
//
//   swift run --package-path Examples/EmbeddedLedger EmbeddedLedger [STORE]
import AuthLedgerLMDB
import Foundation

let store = CommandLine.arguments.dropFirst().first
    ?? NSTemporaryDirectory() + "embedded-ledger-" + UUID().uuidString
let ledger = try await Ledger(lmdb: store)

// A user's first device needs no proof (`via` is `initial`); a second one is approved by it.
let now = Timestamp.now()
let user = "user-\(UInt32.random(in: 0...UInt32.max))"
_ = try await ledger.perform(.register(Registration(user: user, deviceId: "phone", name: "Phone", kind: .mobile, platform: "ios")),
                             meta: StringMap([("actor", "user")]), clock: { now })
_ = try await ledger.perform(.access(user: user, deviceId: "phone"), clock: { now })

let devices = try await ledger.devices(of: user, QueryOptions(asOf: now))
for device in devices.devices {
    print("\(user) \(device.deviceId) \(device.status) via \(device.via ?? "-")")
}
print("head \(try await ledger.head().seq), verified \(try await ledger.verify().seq) events")
await ledger.close()
