import AuthLedger
import HTTPTypes
import Hummingbird

extension LedgerServer {
    /// `GET /v1/users/{u}/history?after=&limit=` (SPEC 3): one page of the user's events.
    /// A full page carries `Link: <…?after=LAST&limit=N>; rel="next"`, the request with
    /// `after` set to the page's last `seq`; a shorter page is the last.
    func registerHistoryRoute(_ t: RouteFamily) {
        t.on(.get, "/v1/users/{user}/history", .scope(.read)) { [self] req, ctx in
            let page = try historyPage(req)
            let events = try await ledger.history(try user(ctx), try queryOptions(req), page: page)
            var response = JSONResponse.make(.array(events.map(\.json)))
            if let limit = page.limit, events.count == limit, let last = events.last {
                response.headers[HTTPField.Name("Link")!] = "<\(nextPage(req, after: last.seq, limit: limit))>; rel=\"next\""
            }
            return response
        }
    }

    /// `after` (a seq, default 0) and `limit` (1…`HistoryPage.maxLimit`, default
    /// `HistoryPage.defaultLimit`), or 400 `invalid_event` naming the parameter.
    func historyPage(_ req: Request) throws(LedgerError) -> HistoryPage {
        let q = req.uri.queryParameters
        var page = HistoryPage(after: 0, limit: HistoryPage.defaultLimit)
        if let v = q.get("after") {
            guard let after = UInt64(v), after <= UInt64(Int64.max) else {
                throw LedgerError.invalid("after must be a seq (an integer from 0 to \(Int64.max))", field: "after")
            }
            page.after = after
        }
        if let v = q.get("limit") {
            guard let limit = Int(v), limit >= 1, limit <= HistoryPage.maxLimit else {
                throw LedgerError.invalid("limit must be an integer from 1 to \(HistoryPage.maxLimit)", field: "limit")
            }
            page.limit = limit
        }
        return page
    }

    /// The same request's path and query, with `after` and `limit` replaced.
    func nextPage(_ req: Request, after: UInt64, limit: Int) -> String {
        let kept = (req.uri.query ?? "").split(separator: "&").filter { item in
            let key = item.split(separator: "=", maxSplits: 1).first ?? ""
            return key != "after" && key != "limit"
        }
        return req.uri.path + "?" + (kept.map(String.init) + ["after=\(after)", "limit=\(limit)"]).joined(separator: "&")
    }
}
