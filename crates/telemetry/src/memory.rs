//! The process's own memory, a user-facing number: storage providers size machines by the peak
//! host memory of a proof.

/// The process's peak resident memory in bytes (`VmHWM` of `/proc/self/status`: everything it
/// has held in RAM at once, file-backed pages of mapped files included), where the kernel reports
/// it; `None` elsewhere.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    vm_hwm(&status)
}

/// `VmHWM` of a `/proc/<pid>/status` text, in bytes.
fn vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let mut fields = line.split_whitespace().skip(1);
    let value: u64 = fields.next()?.parse().ok()?;
    match fields.next() {
        Some("kB") => value.checked_mul(1024),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_is_read_in_bytes() {
        let status = "Name:\tcuzk\nVmPeak:\t  900 kB\nVmHWM:\t    123456 kB\nVmRSS:\t 100 kB\n";
        assert_eq!(vm_hwm(status), Some(123456 * 1024));
        assert_eq!(vm_hwm("VmHWM:\t12 MB\n"), None, "an unknown unit");
        assert_eq!(vm_hwm("VmRSS:\t12 kB\n"), None, "no VmHWM line");
        if cfg!(target_os = "linux") {
            let held = vec![1u8; 8 << 20];
            assert!(peak_rss_bytes().unwrap() >= held.len() as u64);
        }
    }
}
