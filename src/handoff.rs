//! A one-value hand-off between two threads whose receiver sleeps at once.
//!
//! A stdio start hands values between the caller and the server's I/O
//! thread twice (the started child's pipes one way, the connection the
//! other), each taking about as long as a process start. A
//! `crossbeam-channel` receiver spins and then yields the CPU four times
//! before it sleeps: with fifty servers starting at once on two cores,
//! each yield gave the CPU to another thread and cost a context switch
//! (`sched_yield` calls for fifty starts: 266-543 with the channels,
//! 108-150 without; BENCHMARKS.md, stop 46). This receiver parks at once;
//! the value wakes it.

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

enum State<T> {
    /// Nothing sent yet.
    Empty,
    Full(T),
    /// Taken, or the sender dropped without sending.
    Closed,
}

struct Slot<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

/// The sending half: sends at most one value. Dropped without sending, it
/// wakes the receiver with nothing.
pub(crate) struct Sender<T>(Option<Arc<Slot<T>>>);

/// The receiving half.
pub(crate) struct Receiver<T>(Arc<Slot<T>>);

/// A new hand-off.
pub(crate) fn handoff<T>() -> (Sender<T>, Receiver<T>) {
    let slot = Arc::new(Slot {
        state: Mutex::new(State::Empty),
        ready: Condvar::new(),
    });
    (Sender(Some(Arc::clone(&slot))), Receiver(slot))
}

impl<T> Sender<T> {
    /// Hands `value` over; gives it back when the receiver is already gone
    /// (one dropped meanwhile drops the value with the slot).
    pub(crate) fn send(mut self, value: T) -> Result<(), T> {
        let slot = self.0.take().expect("a sender sends once");
        if Arc::strong_count(&slot) == 1 {
            return Err(value);
        }
        *slot.state.lock() = State::Full(value);
        slot.ready.notify_one();
        Ok(())
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take() {
            let mut st = slot.state.lock();
            if matches!(*st, State::Empty) {
                *st = State::Closed;
                drop(st);
                slot.ready.notify_one();
            }
        }
    }
}

impl<T> Receiver<T> {
    /// Waits for the value; `None` once the sender was dropped without
    /// sending.
    pub(crate) fn recv(self) -> Option<T> {
        let mut st = self.0.state.lock();
        loop {
            match std::mem::replace(&mut *st, State::Closed) {
                State::Full(v) => return Some(v),
                State::Closed => return None,
                State::Empty => {
                    *st = State::Empty;
                    self.0.ready.wait(&mut st);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_crosses_threads() {
        let (tx, rx) = handoff();
        let t = std::thread::spawn(move || tx.send(7u32));
        assert_eq!(rx.recv(), Some(7));
        assert!(t.join().unwrap().is_ok());
    }

    #[test]
    fn a_value_sent_before_the_wait_is_kept() {
        let (tx, rx) = handoff();
        assert!(tx.send("early".to_owned()).is_ok());
        assert_eq!(rx.recv().as_deref(), Some("early"));
    }

    #[test]
    fn a_dropped_sender_wakes_the_receiver_with_nothing() {
        let (tx, rx) = handoff::<u8>();
        let t = std::thread::spawn(move || drop(tx));
        assert_eq!(rx.recv(), None);
        t.join().unwrap();
    }

    #[test]
    fn sending_to_a_dropped_receiver_gives_the_value_back() {
        let (tx, rx) = handoff();
        drop(rx);
        assert_eq!(tx.send(3u8), Err(3));
    }
}
