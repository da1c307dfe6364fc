import ArgumentParser

/// Subcommands added by other parts of the tool (serve, bench).
let extraSubcommands: [any ParsableCommand.Type] = [Serve.self, BenchForward.self, StressAppend.self,
                                                     CheckpointCommand.self, Prove.self, ProveConsistency.self, ProveUser.self, VerifyUser.self, AuditIndex.self, Erase.self,
                                                     SSFRotateKey.self, SSFBenchCommand.self, WitnessCommand.self, VerifyCheckpointCommand.self,
                                                     Backup.self, Restore.self]
