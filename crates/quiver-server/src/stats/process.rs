//! What the operating system says about this process and machine (`/proc/self/stat`,
//! `/proc/meminfo`): the `system` group of `/_admin/statistics` and the
//! `arangodb_process_statistics_*` / `arangodb_server_statistics_*` metrics. The dozen
//! numbers are read by hand (a split of one line) rather than through a /proc crate.

/// One reading of the process's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessFigures {
    /// Minor page faults.
    pub minor_page_faults: u64,
    /// Major page faults.
    pub major_page_faults: u64,
    /// CPU time in user mode, seconds.
    pub user_time: f64,
    /// CPU time in kernel mode, seconds.
    pub system_time: f64,
    /// Threads of the process.
    pub threads: u64,
    /// Virtual memory size, bytes.
    pub virtual_size: u64,
    /// Resident set size, bytes.
    pub resident_size: u64,
    /// Physical memory of the machine, bytes.
    pub physical_memory: u64,
    /// CPU cores available to the process.
    pub cpu_cores: u64,
}

impl ProcessFigures {
    /// The resident set as a share of physical memory (0..1).
    pub fn resident_share(&self) -> f64 {
        if self.physical_memory == 0 {
            0.0
        } else {
            self.resident_size as f64 / self.physical_memory as f64
        }
    }
}

#[allow(unsafe_code)]
fn sysconf(name: libc::c_int) -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let v = unsafe { libc::sysconf(name) };
    u64::try_from(v).unwrap_or(0)
}

/// The fields of a `/proc/<pid>/stat` line after the command name (which may contain
/// spaces and parentheses, so the split starts after its last `)`). Field 3 of proc(5) is
/// index 0 here.
fn stat_fields(line: &str) -> Vec<&str> {
    line.rfind(')')
        .map(|i| line[i + 1..].split_whitespace().collect())
        .unwrap_or_default()
}

fn meminfo_total(text: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Reads the figures now (zeros for what the system does not tell).
pub fn read() -> ProcessFigures {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let f = stat_fields(&stat);
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let ticks = sysconf(libc::_SC_CLK_TCK).max(1) as f64;
    let page = sysconf(libc::_SC_PAGESIZE).max(1);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    ProcessFigures {
        // proc(5): minflt (10), majflt (12), utime (14), stime (15), num_threads (20),
        // vsize (23), rss (24), counted from the pid as field 1.
        minor_page_faults: num(7),
        major_page_faults: num(9),
        user_time: num(11) as f64 / ticks,
        system_time: num(12) as f64 / ticks,
        threads: num(17),
        virtual_size: num(20),
        resident_size: num(21) * page,
        physical_memory: meminfo_total(&meminfo),
        cpu_cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_start_after_the_command_name() {
        let line = "42 (a (b) c) S 1 2 3 4 5 6 100 7 200 8 300 400 9 9 9 9 12 0 0 4096 10";
        let f = stat_fields(line);
        assert_eq!(f[0], "S");
        assert_eq!(f[7], "100");
        assert_eq!(f[17], "12");
        assert_eq!(
            meminfo_total("MemTotal:  2048 kB\nMemFree: 1 kB\n"),
            2048 * 1024
        );
    }

    #[test]
    fn this_process_has_threads_memory_and_cores() {
        let p = read();
        assert!(p.threads >= 1);
        assert!(p.resident_size > 0 && p.virtual_size >= p.resident_size);
        assert!(p.physical_memory > 0 && p.cpu_cores >= 1);
        assert!(p.resident_share() > 0.0 && p.resident_share() < 1.0);
    }
}
