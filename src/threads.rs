//! Starting the library's named threads: every thread gets a name (for
//! debuggers and `/proc`) and a stack sized for its work.

use std::io;
use std::thread::JoinHandle;

/// Starts `f` on a thread called `name` with a `stack`-byte stack.
pub(crate) fn spawn<F>(name: String, stack: usize, f: F) -> io::Result<JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    std::thread::Builder::new()
        .name(name)
        .stack_size(stack)
        .spawn(f)
}
