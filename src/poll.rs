//! `poll(2)` for the threads that wait on descriptors: the stdio I/O
//! thread and callers reading their reply, and plain-HTTP POSTs
//! (`http::h1`).

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// A `pollfd` waiting for `fd` to be readable.
pub(crate) fn pollfd(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// Waits until one of `fds` is ready for its events (or hung up, or in
/// error), at most `timeout`. A signal ends the wait early as the timeout
/// does: `Ok`, with no `revents` set.
pub(crate) fn poll_fds(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<()> {
    let ms = match timeout {
        // Rounded up: waking early would only poll again.
        Some(t) => t
            .as_micros()
            .div_ceil(1000)
            .min(i32::MAX as u128)
            .try_into()
            .unwrap_or(i32::MAX),
        None => -1,
    };
    // SAFETY: valid pollfds for descriptors open as long as their owner.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}
