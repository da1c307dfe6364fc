import AuthLedger
import Foundation
import HTTPTypes
import Hummingbird

extension LedgerServer {
    /// Durable subscriptions (SPEC 5), each owned by the token that created it.
    func registerSubscriptionRoutes(_ t: RouteFamily) {
        t.on(.put, "/v1/subscriptions/{name}", .scope(.read)) { [self] req, ctx in
            let b = try await body(req, ["user", "types", "from"], optional: true)
            var filter = EventFilter()
            if let u = try b.string("user") {
                try EventDecoder.checkUser(u)
                filter.user = u
            }
            filter.types = try types(b)
            let owner = try subscriptionOwner(ctx)
            let (s, created) = try await ledger.putSubscription(name: try param(ctx, "name"), filter: filter, from: try b.position("from"),
                                                                owner: owner.restrictTo, createdBy: owner.key)
            return JSONResponse.make(s.json, status: created ? .created : .ok)
        }
        t.on(.get, "/v1/subscriptions/{name}", .scope(.read)) { [self] _, ctx in
            JSONResponse.make(try await subscription(ctx).json)
        }
        t.on(.delete, "/v1/subscriptions/{name}", .scope(.read)) { [self] _, ctx in
            let name = try param(ctx, "name")
            guard try await ledger.deleteSubscription(named: name, owner: try subscriptionOwner(ctx).restrictTo) else { throw LedgerError(.notFound, "no subscription \(name)", field: "name") }
            return Response(status: .noContent)
        }
        t.on(.get, "/v1/subscriptions/{name}/events", .scope(.read)) { [self] req, ctx in
            let s = try await subscription(ctx)
            let start: UInt64
            if let last = try lastEventID(req) { start = try await resumePosition(after: last) } else { start = s.checkpoint + 1 }
            let slot = try subscriberSlot(ctx)
            let feed = try await ledger.events(from: start, filter: s.filter, pollInterval: configuration.pollInterval)
            return eventStream(feed, context: ctx, slot: slot)
        }
        t.on(.post, "/v1/subscriptions/{name}/ack", .scope(.read)) { [self] req, ctx in
            let b = try await body(req, ["seq"])
            guard let seq = try b.position("seq", required: true) else { throw LedgerError.invalid("missing field \"seq\"", field: "seq") }
            return JSONResponse.make(try await ledger.acknowledge(subscription: try param(ctx, "name"), through: seq,
                                                                  owner: try subscriptionOwner(ctx).restrictTo).json)
        }
    }
}
