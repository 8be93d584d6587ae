//! A record's events, 16 bytes each while a response streams in (docs/architecture.md,
//! "Compact records").
//!
//! An [`Event`] spelled out is 32 bytes; most of it is implied by its neighbours. [`Events`]
//! keeps per event one 16-byte [`Packed`] entry:
//!
//! - `lo`: bits 0..48 the stamp as a signed offset from the first event's stamp (±2^47 ns,
//!   39 hours), bits 48..51 the form, bit 51 "has a lag", bits 52..64 `aux` (12 bits);
//! - `hi`: bits 0..32 the span's end, bits 32..64 the receive lag.
//!
//! The span's start is not kept: it is the previous event's end (0 for the first) plus `aux`,
//! the gap between them (an SSE message's blank-line terminator in a raw body; none between
//! the extracted texts of a compact record). A reasoning event keeps its split, relative to its
//! start, in `aux` instead, and must start where the previous event ended.
//!
//! The rule past the packed range: an event whose stamp is more than 2^47 ns from the first
//! one, whose gap or reasoning split exceeds 4 095 bytes, or a reasoning event with a gap, is
//! kept whole in a side list and its entry says so. Every event reads back exactly as it was
//! pushed; only the memory it takes differs.

use super::{Event, EventForm};

/// The signed stamp offset's width.
const STAMP_BITS: u32 = 48;
const STAMP_MASK: u64 = (1 << STAMP_BITS) - 1;
/// Largest gap or reasoning split held inline.
pub const AUX_MAX: u32 = (1 << 12) - 1;
const FORM_SHIFT: u32 = 48;
const LAG_BIT: u64 = 1 << 51;
const AUX_SHIFT: u32 = 52;

const RAW: u64 = 0;
const KEPT: u64 = 1;
const EMPTY: u64 = 2;
const TEXT: u64 = 3;
const REASONING: u64 = 4;
const REASONING_CONTENT: u64 = 5;
/// The event is `spill[hi as u32]`.
const SPILLED: u64 = 7;

/// One event in 16 bytes (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packed {
    lo: u64,
    hi: u64,
}

/// A record's events in arrival order, pushed and read back as [`Event`]s.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Events {
    packed: Vec<Packed>,
    /// Events out of the packed range, in order.
    spill: Vec<Event>,
    /// The first event's stamp, from which the others are offsets.
    base_ns: u64,
    /// The end of the last event pushed.
    last_end: u32,
}

impl Events {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.packed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packed.is_empty()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.packed.capacity() * size_of::<Packed>() + self.spill.capacity() * size_of::<Event>()
    }

    pub fn clear(&mut self) {
        self.packed.clear();
        self.spill.clear();
        self.last_end = 0;
    }

    /// Events kept whole because they did not pack.
    pub fn spilled(&self) -> usize {
        self.spill.len()
    }

    pub fn push(&mut self, e: Event) {
        if self.packed.is_empty() {
            self.base_ns = e.stamp_ns;
        }
        let p = self.pack(&e).unwrap_or_else(|| {
            let at = self.spill.len() as u64;
            self.spill.push(e);
            Packed {
                lo: SPILLED << FORM_SHIFT,
                hi: at,
            }
        });
        self.packed.push(p);
        self.last_end = e.end;
    }

    /// `e` in 16 bytes, or `None` when it is past the packed range.
    fn pack(&self, e: &Event) -> Option<Packed> {
        let offset = e.stamp_ns.wrapping_sub(self.base_ns) as i64;
        let half = 1i64 << (STAMP_BITS - 1);
        if !(-half..half).contains(&offset) {
            return None;
        }
        let gap = e.start.checked_sub(self.last_end)?;
        let (form, aux) = match e.form {
            EventForm::Raw => (RAW, gap),
            EventForm::Kept => (KEPT, gap),
            EventForm::Empty => (EMPTY, gap),
            EventForm::Text => (TEXT, gap),
            EventForm::Reasoning { split, content } if gap == 0 => (
                if content {
                    REASONING_CONTENT
                } else {
                    REASONING
                },
                split,
            ),
            EventForm::Reasoning { .. } => return None,
        };
        if aux > AUX_MAX {
            return None;
        }
        let lag = e.lag_ns.map_or(0, u64::from);
        Some(Packed {
            lo: (offset as u64 & STAMP_MASK)
                | (form << FORM_SHIFT)
                | if e.lag_ns.is_some() { LAG_BIT } else { 0 }
                | (u64::from(aux) << AUX_SHIFT),
            hi: u64::from(e.end) | (lag << 32),
        })
    }

    /// The event `p`, given the end of the one before it.
    fn unpack(&self, p: Packed, last_end: u32) -> Event {
        let form = (p.lo >> FORM_SHIFT) & 0b111;
        if form == SPILLED {
            // An index this list wrote: always in range.
            return self.spill.get(p.hi as usize).copied().unwrap_or(Event {
                stamp_ns: 0,
                start: 0,
                end: 0,
                form: EventForm::Empty,
                lag_ns: None,
            });
        }
        // Sign-extend the 48-bit offset.
        let offset = ((p.lo << (64 - STAMP_BITS)) as i64) >> (64 - STAMP_BITS);
        let aux = (p.lo >> AUX_SHIFT) as u32;
        let (form, gap) = match form {
            RAW => (EventForm::Raw, aux),
            KEPT => (EventForm::Kept, aux),
            EMPTY => (EventForm::Empty, aux),
            TEXT => (EventForm::Text, aux),
            f => (
                EventForm::Reasoning {
                    split: aux,
                    content: f == REASONING_CONTENT,
                },
                0,
            ),
        };
        Event {
            stamp_ns: self.base_ns.wrapping_add(offset as u64),
            start: last_end + gap,
            end: p.hi as u32,
            form,
            lag_ns: (p.lo & LAG_BIT != 0).then_some((p.hi >> 32) as u32),
        }
    }

    /// The events in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            events: self,
            next: 0,
            last_end: 0,
        }
    }

    /// Event `i` (reads the events before it: for tests and rare use).
    pub fn get(&self, i: usize) -> Option<Event> {
        self.iter().nth(i)
    }

    pub fn first(&self) -> Option<Event> {
        self.get(0)
    }

    pub fn last(&self) -> Option<Event> {
        self.iter().last()
    }

    /// Calls `f` on every event and keeps what it leaves (the events packed afresh).
    pub fn update(&mut self, mut f: impl FnMut(&mut Event)) {
        let all: Vec<Event> = self.iter().collect();
        self.clear();
        for mut e in all {
            f(&mut e);
            self.push(e);
        }
    }
}

/// The events of an [`Events`], in order.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    events: &'a Events,
    next: usize,
    last_end: u32,
}

impl Iterator for Iter<'_> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        let p = *self.events.packed.get(self.next)?;
        self.next += 1;
        let e = self.events.unpack(p, self.last_end);
        self.last_end = e.end;
        Some(e)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.events.packed.len() - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Events {
    type Item = Event;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl FromIterator<Event> for Events {
    fn from_iter<I: IntoIterator<Item = Event>>(iter: I) -> Self {
        let mut events = Events::new();
        for e in iter {
            events.push(e);
        }
        events
    }
}

impl From<Vec<Event>> for Events {
    fn from(v: Vec<Event>) -> Self {
        v.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_entry_is_16_bytes() {
        assert_eq!(size_of::<Packed>(), 16);
        assert_eq!(size_of::<Event>(), 32);
    }

    fn ev(stamp_ns: u64, start: u32, end: u32, form: EventForm, lag_ns: Option<u32>) -> Event {
        Event {
            stamp_ns,
            start,
            end,
            form,
            lag_ns,
        }
    }

    #[test]
    fn a_raw_sse_stream_packs_with_no_spill_and_reads_back() {
        // "data: a\n\ndata: bb\n\n": spans 0..7 and 9..17, a 2-byte terminator between.
        let want = vec![
            ev(1_000, 0, 7, EventForm::Raw, Some(500)),
            ev(2_000, 9, 17, EventForm::Raw, None),
        ];
        let events = Events::from(want.clone());
        assert_eq!(events.spilled(), 0);
        assert_eq!(events.iter().collect::<Vec<_>>(), want);
        assert_eq!(events.spill.capacity(), 0);
        assert_eq!(events.heap_bytes(), events.packed.capacity() * 16);
    }

    #[test]
    fn past_the_packed_range_events_are_kept_whole_and_exact() {
        let base = 1u64 << 50;
        let half = 1u64 << 47;
        let want = vec![
            ev(base, 0, 10, EventForm::Text, Some(u32::MAX)),
            // Last stamp inside the range, then one past it, after the base and before.
            ev(base + half - 1, 10, 20, EventForm::Text, None),
            ev(base + half, 20, 30, EventForm::Text, None),
            ev(base - half, 30, 31, EventForm::Empty, None),
            ev(base - half - 1, 31, 31, EventForm::Empty, None),
            // A gap of 4 095 packs, 4 096 does not.
            ev(base, 31 + AUX_MAX, 5_000, EventForm::Raw, Some(0)),
            ev(base, 5_000 + AUX_MAX + 1, u32::MAX, EventForm::Raw, Some(7)),
            // A span that starts before the last one ended (never written by a worker).
            ev(base, 3, 4, EventForm::Kept, None),
            // Reasoning: a split of 4 095 packs; 4 096, or a gap, does not.
            ev(
                base,
                4,
                5_000,
                EventForm::Reasoning {
                    split: AUX_MAX,
                    content: true,
                },
                None,
            ),
            ev(
                base,
                5_000,
                9_999,
                EventForm::Reasoning {
                    split: AUX_MAX + 1,
                    content: false,
                },
                None,
            ),
            ev(
                base,
                10_000,
                10_001,
                EventForm::Reasoning {
                    split: 0,
                    content: false,
                },
                None,
            ),
        ];
        let events = Events::from(want.clone());
        assert_eq!(events.iter().collect::<Vec<_>>(), want);
        assert_eq!(events.spilled(), 6);
        assert_eq!(events.get(2), Some(want[2]));
        assert_eq!(events.last(), want.last().copied());
    }

    fn any_form() -> impl Strategy<Value = EventForm> {
        prop_oneof![
            Just(EventForm::Raw),
            Just(EventForm::Kept),
            Just(EventForm::Empty),
            Just(EventForm::Text),
            (any::<u32>(), any::<bool>())
                .prop_map(|(split, content)| EventForm::Reasoning { split, content }),
            (0..=AUX_MAX + 2, any::<bool>())
                .prop_map(|(split, content)| EventForm::Reasoning { split, content }),
        ]
    }

    fn any_event() -> impl Strategy<Value = Event> {
        (
            prop_oneof![any::<u64>(), 0u64..1 << 49],
            any::<u32>(),
            any::<u32>(),
            any_form(),
            proptest::option::of(any::<u32>()),
        )
            .prop_map(|(stamp_ns, start, end, form, lag_ns)| ev(stamp_ns, start, end, form, lag_ns))
    }

    /// A worker's stream: stamps that rise, spans that follow one another.
    fn any_stream() -> impl Strategy<Value = Vec<Event>> {
        (
            any::<u64>(),
            proptest::collection::vec(
                (
                    0u64..1 << 40,
                    0u32..5_000,
                    0u32..100_000,
                    any_form(),
                    proptest::option::of(any::<u32>()),
                ),
                0..40,
            ),
        )
            .prop_map(|(t0, steps)| {
                let (mut t, mut end) = (t0, 0u32);
                steps
                    .into_iter()
                    .map(|(dt, gap, len, form, lag)| {
                        t = t.wrapping_add(dt);
                        let start = end.saturating_add(gap);
                        end = start.saturating_add(len);
                        ev(t, start, end, form, lag)
                    })
                    .collect()
            })
    }

    proptest! {
        #[test]
        fn any_events_read_back_exactly(want in proptest::collection::vec(any_event(), 0..40)) {
            let events = Events::from(want.clone());
            prop_assert_eq!(events.len(), want.len());
            prop_assert_eq!(events.iter().collect::<Vec<_>>(), want);
        }

        #[test]
        fn a_stream_reads_back_exactly(want in any_stream()) {
            let events = Events::from(want.clone());
            prop_assert_eq!(events.iter().collect::<Vec<_>>(), want.clone());
            // What fits the range is packed: nothing else is spilled.
            let fits = |i: usize, e: &Event| {
                let prev = if i == 0 { 0 } else { want[i - 1].end };
                let off = e.stamp_ns.wrapping_sub(want[0].stamp_ns) as i64;
                let gap = e.start - prev;
                (-(1i64 << 47)..1i64 << 47).contains(&off)
                    && match e.form {
                        EventForm::Reasoning { split, .. } => gap == 0 && split <= AUX_MAX,
                        _ => gap <= AUX_MAX,
                    }
            };
            let spilled = want.iter().enumerate().filter(|(i, e)| !fits(*i, e)).count();
            prop_assert_eq!(events.spilled(), spilled);
        }
    }
}
