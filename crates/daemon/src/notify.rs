//! systemd's readiness protocol (`sd_notify`), by hand: under a unit of `Type=notify`, systemd
//! sets `$NOTIFY_SOCKET` to a unix datagram socket, and the daemon sends `READY=1` once it
//! serves and `STOPPING=1` when it begins to stop. A path starting with `@` names a socket in
//! the abstract namespace (Linux). Without the variable nothing is sent; a failed send is
//! logged, never fatal: the daemon serves either way.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixDatagram;
use std::path::Path;

/// The environment variable systemd sets.
pub const NOTIFY_SOCKET: &str = "NOTIFY_SOCKET";

/// Tells systemd `state` (`READY=1`, `STOPPING=1`) when `$NOTIFY_SOCKET` is set.
pub fn notify(state: &str) {
    let Some(socket) = std::env::var_os(NOTIFY_SOCKET).filter(|s| !s.is_empty()) else {
        return;
    };
    if let Err(e) = send(&socket, state) {
        tracing::warn!(socket = ?socket, state, error = %e, "sd_notify failed");
    }
}

/// Sends `state` as one datagram to `socket` (a path, or `@name` in the abstract namespace).
pub fn send(socket: &OsStr, state: &str) -> std::io::Result<()> {
    let sender = UnixDatagram::unbound()?;
    match socket.as_bytes().strip_prefix(b"@") {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            sender.send_to_addr(state.as_bytes(), &addr)?;
        }
        None => {
            sender.send_to(state.as_bytes(), Path::new(socket))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receive(socket: &UnixDatagram) -> String {
        socket
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let mut buf = [0u8; 256];
        let n = socket.recv(&mut buf).unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[test]
    fn a_path_and_an_abstract_name_each_get_the_datagram() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let listener = UnixDatagram::bind(&path).unwrap();
        send(path.as_os_str(), "READY=1").unwrap();
        assert_eq!(receive(&listener), "READY=1");

        use std::os::linux::net::SocketAddrExt;
        let name = format!("cuzk-notify-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixDatagram::bind_addr(&addr).unwrap();
        send(OsStr::new(&format!("@{name}")), "STOPPING=1").unwrap();
        assert_eq!(receive(&listener), "STOPPING=1");

        assert!(send(dir.path().join("nobody").as_os_str(), "READY=1").is_err());
    }
}
