// The domain types (events, rules, answers) are part of this module's API: a service that
// imports AuthLedger sees them without a second import.
@_exported import AuthLedgerCore
