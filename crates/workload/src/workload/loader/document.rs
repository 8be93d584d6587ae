//! One JSON document (not JSON Lines) read as a stream: the elements of its top-level list
//! (or of the list under one key of its top-level object) are handed over one at a time, so
//! memory holds one element, never the file. An error about an element's content names the
//! line where that element ends; a syntax error, the line where the parser stopped.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::error::{LoadError, LoadErrorKind};

/// Where the list is.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    /// The document is the list.
    List,
    /// The list is the value of this key of the top-level object; other keys are unknown.
    Under(&'static str),
}

/// What an element handler reports: the field (a path inside the document) and the problem.
pub type Problem = (String, LoadErrorKind);

/// Calls `each(index, element)` for every element of the list, in order, and returns how many
/// there were.
///
/// # Errors
/// An unreadable file, invalid JSON, a wrong shape, or the first problem `each` reports.
pub fn for_each<F>(path: &Path, shape: Shape, each: F) -> Result<usize, LoadError>
where
    F: FnMut(usize, Value) -> Result<(), Problem>,
{
    let file =
        File::open(path).map_err(|e| LoadError::file(path, LoadErrorKind::Io(e.to_string())))?;
    let newlines = Rc::new(Cell::new(0));
    let reader = Counting {
        inner: BufReader::with_capacity(256 * 1024, file),
        newlines: newlines.clone(),
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let state = State {
        each: RefCell::new(each),
        problem: RefCell::new(None),
        count: RefCell::new(0),
        newlines,
    };
    let run = match shape {
        Shape::List => (&mut de).deserialize_seq(ListVisitor {
            state: &state,
            key: "",
        }),
        Shape::Under(key) => (&mut de).deserialize_map(TopVisitor { state: &state, key }),
    };
    let run = run.and_then(|()| de.end());
    match run {
        Ok(()) => Ok(state.count.into_inner()),
        Err(e) => {
            let line = e.line() as u64;
            Err(match state.problem.into_inner() {
                Some((line, field, kind)) => LoadError::at(path, line, field, kind),
                None if e.is_eof() && line <= 1 && e.column() == 0 => {
                    LoadError::file(path, LoadErrorKind::Empty)
                }
                None => LoadError::line(path, line, LoadErrorKind::Json(e.to_string())),
            })
        }
    }
}

/// A reader that counts the newlines read through it. serde_json reads one byte at a time and
/// peeks at most one byte ahead, so after an object was parsed the count is that of the lines
/// before the object's closing brace.
struct Counting<R> {
    inner: R,
    newlines: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let seen = memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        self.newlines.set(self.newlines.get() + seen);
        Ok(n)
    }
}

struct State<F> {
    each: RefCell<F>,
    problem: RefCell<Option<(u64, String, LoadErrorKind)>>,
    count: RefCell<usize>,
    newlines: Rc<Cell<u64>>,
}

impl<F> State<F> {
    /// Records the problem at the current line and stops the parse.
    fn fail<E: de::Error>(&self, field: String, kind: LoadErrorKind) -> E {
        let line = self.newlines.get() + 1;
        *self.problem.borrow_mut() = Some((line, field, kind));
        E::custom("dataset problem")
    }
}

struct TopVisitor<'s, F> {
    state: &'s State<F>,
    key: &'static str,
}

impl<'de, F> Visitor<'de> for TopVisitor<'_, F>
where
    F: FnMut(usize, Value) -> Result<(), Problem>,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a JSON object with a \"{}\" list", self.key)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = false;
        while let Some(k) = map.next_key::<String>()? {
            if k != self.key {
                return Err(self.state.fail(k, LoadErrorKind::UnknownField));
            }
            map.next_value_seed(ListVisitor {
                state: self.state,
                key: self.key,
            })?;
            seen = true;
        }
        if !seen {
            return Err(self
                .state
                .fail(self.key.to_string(), LoadErrorKind::Missing));
        }
        Ok(())
    }
}

struct ListVisitor<'s, F> {
    state: &'s State<F>,
    key: &'static str,
}

impl<'de, F> DeserializeSeed<'de> for ListVisitor<'_, F>
where
    F: FnMut(usize, Value) -> Result<(), Problem>,
{
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, F> Visitor<'de> for ListVisitor<'_, F>
where
    F: FnMut(usize, Value) -> Result<(), Problem>,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON list")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while let Some(v) = seq.next_element::<Value>()? {
            // A signal stops the load; the caller reports the interruption, not this error.
            if ringperf_io::control::interrupted() {
                let why = LoadErrorKind::Invalid("loading interrupted by a signal".into());
                return Err(self.state.fail(String::new(), why));
            }
            if let Err((field, kind)) = (self.state.each.borrow_mut())(i, v) {
                let field = if self.key.is_empty() {
                    format!("[{i}]{field}")
                } else {
                    format!("{}[{i}]{field}", self.key)
                };
                return Err(self.state.fail(field, kind));
            }
            i += 1;
        }
        *self.state.count.borrow_mut() = i;
        Ok(())
    }
}
