import AuthLedger
import Foundation
import HTTPTypes
import Hummingbird

extension LedgerServer {
    /// `GET /v1/users?prefix=&after=&limit=` (read): a page of the users, by key, each with
    /// its number of events and its latest event. A page with more after it carries `next`
    /// (the `after` of the next page) and `Link: <…?after=NEXT&limit=N>; rel="next"`.
    func registerUsersRoute(_ t: RouteFamily) {
        t.on(.get, "/v1/users", .scope(.read)) { [self] req, _ in
            let page = try userPage(req)
            let list = try await ledger.users(page)
            var response = JSONResponse.make(list.json)
            if let next = list.next {
                var c = URLComponents()
                c.queryItems = (page.prefix.isEmpty ? [] : [URLQueryItem(name: "prefix", value: page.prefix)])
                    + [URLQueryItem(name: "after", value: next), URLQueryItem(name: "limit", value: "\(page.limit)")]
                let query = c.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B") ?? ""
                response.headers[HTTPField.Name("Link")!] = "<\(req.uri.path)?\(query)>; rel=\"next\""
            }
            return response
        }
    }

    /// `prefix` (default ""), `after` and `limit` (1…`UserPage.maxLimit`, default
    /// `UserPage.defaultLimit`), or 400 `invalid_event` naming the parameter.
    func userPage(_ req: Request) throws(LedgerError) -> UserPage {
        let q = req.uri.queryParameters
        var limit = UserPage.defaultLimit
        if let v = q.get("limit") {
            guard let n = Int(v), (1...UserPage.maxLimit).contains(n) else {
                throw LedgerError.invalid("limit must be an integer from 1 to \(UserPage.maxLimit)", field: "limit")
            }
            limit = n
        }
        return try UserPage(prefix: q.get("prefix") ?? "", after: q.get("after"), limit: limit)
    }
}
