use std::{fmt, rc::Rc};

use crate::time::driver::ClockTime;

/// Handle to time driver instance.
///
/// ringperf patch: the handle keeps no copy of the driver's time source (16 bytes); it reads
/// the driver's own when it needs it. Every timer entry holds a handle, and a request's attempt
/// timeout is a timer entry kept for as long as the response takes.
#[derive(Clone)]
pub(crate) struct Handle {
    inner: Rc<super::Inner>,
}

impl Handle {
    /// Creates a new timer `Handle` from a shared `Inner` timer state.
    pub(super) fn new(inner: Rc<super::Inner>) -> Self {
        Handle { inner }
    }

    /// Returns the time source associated with this handle (a copy of the driver's; it is
    /// asked only where the driver's state is not borrowed: when an entry registers, and
    /// before the driver processes its timers).
    pub(super) fn time_source(&self) -> ClockTime {
        self.inner.state.borrow().time_source.clone()
    }

    /// Access the driver's inner structure
    pub(super) fn get(&self) -> &super::Inner {
        &self.inner
    }
}

impl Handle {
    /// Tries to get a handle to the current timer.
    ///
    /// # Panics
    ///
    /// This function panics if there is no current timer set.
    ///
    /// It can be triggered when `Builder::enable_timer()` or
    /// `Builder::enable_all()` are not included in the builder.
    ///
    /// It can also panic whenever a timer is created outside of a
    /// Monoio runtime. That is why `rt.block_on(delay_for(...))` will panic,
    /// since the function is executed outside of the runtime.
    /// Whereas `rt.block_on(async {delay_for(...).await})` doesn't panic.
    /// And this is because wrapping the function on an async makes it lazy,
    /// and so gets executed inside the runtime successfully without
    /// panicking.
    pub(crate) fn current() -> Self {
        crate::runtime::CURRENT.with(|c| {
            c.time_handle.clone().expect(
                "unable to get time handle, maybe you have not enable_timer on creating runtime?",
            )
        })
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Handle")
    }
}
