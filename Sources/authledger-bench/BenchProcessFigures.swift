import Foundation

/// What the process itself used: memory, CPU time and bytes written (Linux /proc and
/// getrusage), read around phases.
extension BenchRun {
    /// Resident anonymous and file-backed (the LMDB maps) memory now, and the peak.
    static func memory() -> (anon: Double, file: Double, peak: Double) {
        guard let s = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0, 0) }
        func field(_ name: String) -> Double {
            guard let line = s.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
        }
        return (field("RssAnon"), field("RssFile"), field("VmHWM"))
    }

    /// Resets `VmHWM` to the current resident set (Linux: `5` to `/proc/self/clear_refs`), so
    /// the next `memory().peak` is the peak since now.
    static func resetPeak() {
        guard let f = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return }
        try? f.write(contentsOf: Data("5".utf8))
        try? f.close()
    }

    /// Bytes this process has passed to `write` calls so far (`wchar` of /proc/self/io):
    /// LMDB writes a commit's dirty pages with them, so a delta over commits is the pages
    /// each commit writes and syncs.
    static func bytesWritten() -> Double {
        guard let s = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8),
              let line = s.split(separator: "\n").first(where: { $0.hasPrefix("wchar:") }) else { return 0 }
        return Double(line.split(separator: " ").last ?? "0") ?? 0
    }

    static func cpuSeconds() -> Double {
        var u = rusage()
        getrusage(RUSAGE_SELF.rawValue, &u)
        return Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6
    }
}
