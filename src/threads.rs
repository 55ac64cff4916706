//! Starting the library's named threads: every thread gets a name (for
//! debuggers and `/proc`) and a stack sized for its work.

use std::io;
use std::thread::JoinHandle;

/// Starts `f` on a thread called `name` with a `stack`-byte stack. Every
/// thread the library starts goes through here, so that each has a name
/// and a chosen stack (see the `*_THREAD_STACK` constants of
/// [`limits`](crate::limits)).
pub(crate) fn spawn<F, T>(name: String, stack: usize, f: F) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    std::thread::Builder::new()
        .name(name)
        .stack_size(stack)
        .spawn(f)
}

/// [`spawn`] inside a [`std::thread::scope`]: the thread may borrow from
/// the enclosing stack frame and is joined when the scope ends.
pub(crate) fn spawn_scoped<'scope, 'env, F, T>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    name: String,
    stack: usize,
    f: F,
) -> io::Result<std::thread::ScopedJoinHandle<'scope, T>>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    std::thread::Builder::new()
        .name(name)
        .stack_size(stack)
        .spawn_scoped(scope, f)
}
