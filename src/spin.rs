//! Who may yield the CPU for a reply instead of sleeping.
//!
//! A caller whose reply is due within microseconds sees it sooner by
//! polling without blocking and yielding between polls than by sleeping:
//! the wake-up of a sleeping thread costs tens of microseconds on a virtual
//! machine. Used by stdio callers that read their own reply and by plain
//! HTTP requests waiting for their answer ([`ClientOptions::caller_spin`]).
//! Spinning callers take CPU from the servers, so few may do it at once.
//!
//! [`ClientOptions::caller_spin`]: crate::ClientOptions::caller_spin

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Callers yielding for their reply right now, in the whole process.
static SPINNERS: AtomicUsize = AtomicUsize::new(0);

/// The right to yield instead of sleeping, held by at most half the cores'
/// worth of callers at once (at least one): callers of many connections
/// waiting together sleep, and leave the cores to the servers.
pub(crate) struct SpinSlot;

impl SpinSlot {
    /// A slot, if fewer than the bound are taken.
    pub(crate) fn take() -> Option<SpinSlot> {
        static MAX: OnceLock<usize> = OnceLock::new();
        let max = *MAX.get_or_init(|| {
            std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
        });
        SPINNERS
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| SpinSlot)
    }
}

impl Drop for SpinSlot {
    fn drop(&mut self) {
        SPINNERS.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_slots_are_bounded_and_given_back() {
        // Other tests may hold slots meanwhile: only the bound and the
        // release are asserted.
        let held: Vec<SpinSlot> = std::iter::from_fn(SpinSlot::take).take(1024).collect();
        assert!(
            held.len() < 1024,
            "the number of spinning callers is bounded"
        );
        if !held.is_empty() {
            drop(held);
            assert!(SpinSlot::take().is_some(), "a released slot can be taken");
        }
    }
}
