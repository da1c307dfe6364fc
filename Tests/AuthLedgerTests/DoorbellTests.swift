@testable import AuthLedger
@testable import AuthLedgerCore
import Foundation
import Testing

/// The doorbell under the live feed and the Shared Signals push service: a wait
/// must end on a ring, on its timeout (never before), and on cancellation.
@Suite struct DoorbellTests {
    /// Runs `body`; false when it has not finished after `limit` (a generous watchdog
    /// so that a wait that never ends fails the test instead of hanging it).
    static func finishes(within limit: Duration = .seconds(60), _ body: @escaping @Sendable () async -> Void) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await body(); return true }
            group.addTask { try? await Task.sleep(for: limit); return false }
            let first = await group.next()!
            group.cancelAll()
            return first
        }
    }

    static func waitUntil(_ condition: () -> Bool) async {
        while !condition() { try? await Task.sleep(for: .milliseconds(1)) }
    }

    @Test func aRingWakesEveryWaiter() async {
        let bell = Doorbell()
        let waits = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<3 { group.addTask { await bell.wait(timeout: .seconds(3600)) } }
            }
        }
        await Self.waitUntil { bell.waiting == 3 }
        bell.ring()
        #expect(await Self.finishes { await waits.value })
        #expect(bell.waiting == 0)
    }

    @Test func aRingWithNobodyWaitingIsKeptForTheNextWait() async {
        let bell = Doorbell()
        bell.ring()
        #expect(await Self.finishes { await bell.wait(timeout: .seconds(3600)) })
        // Kept once only: the next wait times out.
        let clock = ContinuousClock()
        let start = clock.now
        await bell.wait(timeout: .milliseconds(30))
        #expect(start.duration(to: clock.now) >= .milliseconds(30))
    }

    @Test func waitsTimeOutNeverBeforeTheirDeadline() async {
        // Many doorbells, several waiters each, deadlines in every order (an earlier
        // deadline arriving after a later one re-arms the shared ticker).
        let bells = (0..<20).map { _ in Doorbell() }
        let ok = await Self.finishes {
            await withTaskGroup(of: Bool.self) { group in
                for k in 0..<100 {
                    let bell = bells[k % bells.count]
                    let timeout = Duration.milliseconds(5 + (k * 37) % 90)
                    group.addTask {
                        let clock = ContinuousClock()
                        let start = clock.now
                        await bell.wait(timeout: timeout)
                        return start.duration(to: clock.now) >= timeout
                    }
                }
                var all = true
                for await early in group { all = all && early }
                #expect(all, "a wait returned before its timeout")
            }
        }
        #expect(ok, "a wait never timed out")
    }

    @Test func aShortWaitBesideALongOneTimesOutAndTheLongOneStillWaits() async {
        let bell = Doorbell()
        let long = Task { await bell.wait(timeout: .seconds(3600)) }
        await Self.waitUntil { bell.waiting == 1 }
        #expect(await Self.finishes { await bell.wait(timeout: .milliseconds(20)) })
        #expect(bell.waiting == 1)
        bell.ring()
        #expect(await Self.finishes { await long.value })
    }

    @Test func cancellingAWaitEndsOnlyThatWait() async {
        let bell = Doorbell()
        let a = Task { await bell.wait(timeout: .seconds(3600)) }
        let b = Task { await bell.wait(timeout: .seconds(3600)) }
        await Self.waitUntil { bell.waiting == 2 }
        a.cancel()
        #expect(await Self.finishes { await a.value })
        #expect(bell.waiting == 1)
        b.cancel()
        #expect(await Self.finishes { await b.value })
    }
}
