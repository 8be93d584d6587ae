//! The command line read: the one place the argument parser runs. What was given explicitly is
//! read here too, from the parser's own record of where each value came from, so nothing further
//! down needs the command-line text to know it.

use std::collections::BTreeMap;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser};

use super::{Cli, Command, ProfileArgs};

/// The settings given explicitly, by flag id, each with its values as written (a value with
/// choices spelled as its choice: `HTTP` → `http`).
pub type Given = BTreeMap<String, Vec<String>>;

/// AIPerf's spellings the argument parser cannot take as written, with the flag each stands for:
/// `-vv` is AIPerf's short for `--extra-verbose`, where the parser reads a short option as one
/// letter (`-v -v`).
const RESPELLED: [(&str, &str); 1] = [("-vv", "--extra-verbose")];

/// The flag `word` stands for when it is one of AIPerf's [`RESPELLED`] spellings.
pub(crate) fn respelled(word: &str) -> Option<&'static str> {
    RESPELLED.iter().find(|(s, _)| *s == word).map(|(_, f)| *f)
}

/// The spellings of [`RESPELLED`] (the flag table lists them beside the parser's own).
#[cfg(test)]
pub(crate) fn respellings() -> impl Iterator<Item = &'static str> {
    RESPELLED.iter().map(|(s, _)| *s)
}

/// Parses a whole `ringperf …` command line, and what its `profile` subcommand was given
/// (empty for another subcommand).
///
/// # Errors
/// clap's error (also for `--help` and `--version`, which it prints).
pub fn parse(argv: &[String]) -> Result<(Cli, Given), clap::Error> {
    let mut cmd = Cli::command();
    // Up to a `--`, AIPerf's spellings the parser cannot take are given under the flag's name.
    let end = argv.iter().position(|w| w == "--").unwrap_or(argv.len());
    let words = argv.iter().enumerate().map(|(i, w)| match respelled(w) {
        Some(flag) if i < end => flag.to_owned(),
        _ => w.clone(),
    });
    let matches = cmd
        .try_get_matches_from_mut(words)
        .map_err(endpoint_suggestion)?;
    let cli = Cli::from_arg_matches(&matches)?;
    let given = match (matches.subcommand(), cmd.find_subcommand("profile")) {
        (Some(("profile", sub)), Some(profile)) => given_of(profile, sub),
        _ => Given::new(),
    };
    Ok((cli, given))
}

/// An `--endpoint-type` value that names an endpoint by its route (`chat_completions`,
/// `chat/completions`, `audio-transcriptions`) suggests the type serving that route (`chat`,
/// `audio-transcription`) instead of the parser's nearest spelling (`completions`). Any other
/// error is left as it is.
fn endpoint_suggestion(mut e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::InvalidValue {
        return e;
    }
    let text = |k| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let (Some(arg), Some(value)) = (
        text(ContextKind::InvalidArg),
        text(ContextKind::InvalidValue),
    ) else {
        return e;
    };
    if !arg.starts_with("--endpoint-type") {
        return e;
    }
    if let Some(name) = endpoint_by_route(&value) {
        e.insert(ContextKind::SuggestedValue, ContextValue::String(name));
    }
    e
}

/// The `--endpoint-type` whose default route ends with `value` read as a route (`_` and `-` as
/// `/`, any case): the shortest such route's type, spelled as the flag takes it.
fn endpoint_by_route(value: &str) -> Option<String> {
    let route: String = value
        .trim_matches('/')
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c == '_' || c == '-' { '/' } else { c })
        .collect();
    if route.is_empty() {
        return None;
    }
    let tail = format!("/{route}");
    ringperf_wire::endpoint::EndpointKind::ALL
        .iter()
        .filter(|k| k.default_path().ends_with(&tail))
        .min_by_key(|k| k.default_path().len())
        .map(|k| k.as_str().replace('_', "-"))
}

/// Parses a `ringperf profile …` command line into its settings and what was given.
///
/// # Errors
/// clap's error, or the command line is another subcommand's.
pub fn profile_args(argv: &[String]) -> Result<(ProfileArgs, Given), clap::Error> {
    let (cli, given) = parse(argv)?;
    match cli.command {
        Command::Profile(p) => Ok((*p, given)),
        _ => Err(clap::Error::raw(
            clap::error::ErrorKind::InvalidSubcommand,
            "not a `profile` command line",
        )),
    }
}

/// One setting given outside the command line (a config file's): the `profile` flag that sets
/// it and its values, as the file has them (a number stays a number; a switch has none) and as
/// written.
pub type Setting = (String, Vec<(serde_json::Value, String)>);

/// `settings` with `file`'s settings under them: each one whose flag was not given (`given`)
/// takes the file's value, typed as its flag's argument is (whole or real number, text, a
/// choice's name, a list, a switch), and is marked given. No command line is made: each value is
/// checked against the setting's type and set by its flag id.
///
/// # Errors
/// A name that is no `profile` flag, or a value its setting cannot hold (named with the flag).
pub fn under_file(
    settings: &ProfileArgs,
    given: &Given,
    file: &[Setting],
) -> Result<(ProfileArgs, Given), String> {
    set(settings, given, file, &[], true)
}

/// `settings` with `over`'s settings in place of theirs (a `--variant`'s keys: values as the
/// user wrote them, a switch with none), each marked given, and the flags `cleared` back at
/// their defaults, not given.
///
/// # Errors
/// As [`under_file`].
pub fn over(
    settings: &ProfileArgs,
    given: &Given,
    over: &[Setting],
    cleared: &[String],
) -> Result<(ProfileArgs, Given), String> {
    set(settings, given, over, cleared, false)
}

/// [`under_file`] (`keep_given`) and [`over`].
fn set(
    settings: &ProfileArgs,
    given: &Given,
    file: &[Setting],
    cleared: &[String],
    keep_given: bool,
) -> Result<(ProfileArgs, Given), String> {
    static COMMAND: std::sync::LazyLock<clap::Command> = std::sync::LazyLock::new(Cli::command);
    let profile = COMMAND
        .find_subcommand("profile")
        .ok_or("no profile command")?;
    // Per flag id, in the file's order: the argument and every value given (a flag the file
    // gives twice, as `--url` per URL, collects them).
    let mut by_id: Vec<(&clap::Arg, Vec<(serde_json::Value, String)>)> = Vec::new();
    for (flag, values) in file {
        let arg = arg_of(profile, flag).ok_or_else(|| format!("{flag}: not a profile flag"))?;
        if keep_given && given.contains_key(arg.get_id().as_str()) {
            continue;
        }
        match by_id.iter_mut().find(|(a, _)| a.get_id() == arg.get_id()) {
            Some((_, all)) => all.extend(values.iter().cloned()),
            None => by_id.push((arg, values.clone())),
        }
    }
    let mut base = serde_json::to_value(settings).map_err(|e| e.to_string())?;
    let mut given = given.clone();
    for (arg, values) in by_id {
        let id = arg.get_id().as_str();
        let name = arg
            .get_long()
            .map_or_else(|| id.to_owned(), |l| format!("--{l}"));
        let typed = typed(arg, &values).map_err(|why| format!("{name}: {why}"))?;
        let slot = base
            .get_mut(id)
            .ok_or_else(|| format!("{name}: no setting {id}"))?;
        *slot = typed;
        given.insert(
            id.to_owned(),
            values.iter().map(|(_, written)| written.clone()).collect(),
        );
    }
    if !cleared.is_empty() {
        let defaults = Cli::try_parse_from(["ringperf", "profile"])
            .map_err(|e| e.to_string())
            .and_then(|c| match c.command {
                Command::Profile(p) => serde_json::to_value(&p).map_err(|e| e.to_string()),
                _ => Err("not profile".to_owned()),
            })?;
        for name in cleared {
            let arg = arg_of(profile, name).ok_or_else(|| format!("{name}: not a profile flag"))?;
            let id = arg.get_id().as_str();
            if let (Some(slot), Some(v)) = (base.get_mut(id), defaults.get(id)) {
                *slot = v.clone();
            }
            given.remove(id);
        }
    }
    let settings = serde_json::from_value(base).map_err(|e| e.to_string())?;
    Ok((settings, given))
}

/// The `profile` argument a flag name spells (`--isl`, `-m`, `--no-auto-plot`): its long name or
/// an alias first, then a `--no-` negation of a long name.
fn arg_of<'a>(profile: &'a clap::Command, flag: &str) -> Option<&'a clap::Arg> {
    let args = || profile.get_arguments();
    let Some(long) = flag.strip_prefix("--") else {
        let s = flag.strip_prefix('-')?.chars().next()?;
        return args().find(|a| a.get_short() == Some(s));
    };
    args()
        .find(|a| {
            a.get_long() == Some(long) || a.get_all_aliases().is_some_and(|al| al.contains(&long))
        })
        .or_else(|| {
            let positive = long.strip_prefix("no-")?;
            args().find(|a| a.get_long() == Some(positive))
        })
}

/// `values` as the serialized form of `arg`'s setting.
fn typed(
    arg: &clap::Arg,
    values: &[(serde_json::Value, String)],
) -> Result<serde_json::Value, String> {
    use serde_json::Value;
    use std::any::TypeId;
    if !arg.get_action().takes_values() {
        return Ok(Value::Bool(matches!(
            arg.get_action(),
            clap::ArgAction::SetTrue
        )));
    }
    let ty = arg.get_value_parser().type_id();
    let whole = [
        TypeId::of::<u64>(),
        TypeId::of::<u32>(),
        TypeId::of::<usize>(),
        TypeId::of::<u16>(),
    ]
    .iter()
    .any(|t| ty == *t);
    let real = ty == TypeId::of::<f64>();
    let choices = arg.get_possible_values();
    let choice = |t: &str| -> Result<Value, String> {
        if choices.is_empty() || choices.iter().any(|c| c.matches(t, true)) {
            return Ok(Value::from(t));
        }
        let names: Vec<&str> = choices
            .iter()
            .filter(|c| !c.is_hide_set())
            .map(clap::builder::PossibleValue::get_name)
            .collect();
        Err(format!("'{t}' is not one of {}", names.join(", ")))
    };
    let one = |v: &Value| -> Result<Value, String> {
        match v {
            // AIPerf writes some counts as floats (`turns.mean: 3.0`).
            Value::Number(n) if whole => n
                .as_u64()
                .or_else(|| {
                    n.as_f64()
                        .filter(|x| x.fract() == 0.0 && *x >= 0.0 && *x <= u64::MAX as f64)
                        .map(|x| x as u64)
                })
                .map(Value::from)
                .ok_or_else(|| format!("{n} is not a whole number")),
            Value::String(t) if whole => t
                .trim()
                .parse::<u64>()
                .map(Value::from)
                .map_err(|_| format!("'{t}' is not a whole number")),
            Value::Number(_) if real => Ok(v.clone()),
            // `inf` stays text: the settings that take it read it so.
            Value::String(t) if real && t == "inf" => Ok(v.clone()),
            Value::String(t) if real => t
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .map(Value::from)
                .ok_or_else(|| format!("'{t}' is not a number")),
            Value::String(t) => choice(t),
            Value::Number(_) | Value::Bool(_) => choice(&v.to_string()),
            other => Err(format!("{other} is not a value")),
        }
    };
    let delimiter = arg.get_value_delimiter();
    let mut items = Vec::new();
    for (v, _) in values {
        match (v, delimiter) {
            (Value::String(t), Some(d)) => {
                for part in t.split(d) {
                    items.push(one(&Value::from(part))?);
                }
            }
            _ => items.push(one(v)?),
        }
    }
    let many = matches!(arg.get_action(), clap::ArgAction::Append)
        || arg.get_num_args().is_some_and(|n| n.max_values() > 1)
        || delimiter.is_some();
    match items.last() {
        _ if many => Ok(Value::Array(items)),
        // Given twice (a file's `random_seed` at the top and in its dataset): the last one, as
        // on a command line.
        Some(last) => Ok(last.clone()),
        None => Err("takes a value, given none".to_owned()),
    }
}

/// The ids of the `profile` arguments whose value came from the command line, with their values.
fn given_of(profile: &clap::Command, sub: &ArgMatches) -> Given {
    sub.ids()
        .map(|id| id.as_str())
        .filter(|id| sub.value_source(id) == Some(ValueSource::CommandLine))
        // An argument's id, not a group's (each flattened struct is a group).
        .filter_map(|id| Some((id, profile.get_arguments().find(|a| a.get_id() == id)?)))
        .map(|(id, arg)| {
            let choices = arg.get_possible_values();
            let values = sub
                .get_raw(id)
                .into_iter()
                .flatten()
                .map(|raw| {
                    let raw = raw.to_string_lossy();
                    choices
                        .iter()
                        .find(|c| c.matches(&raw, true))
                        .map_or_else(|| raw.to_string(), |c| c.get_name().to_owned())
                })
                .collect();
            (id.to_string(), values)
        })
        .collect()
}

/// The `profile` flag with clap id `id`: its long name and visible aliases, as `--a/--b` (the id
/// itself when no argument has it).
pub fn flag_names(id: &str) -> String {
    let cmd = Cli::command();
    let Some(arg) = cmd
        .find_subcommand("profile")
        .and_then(|p| p.get_arguments().find(|a| a.get_id() == id))
    else {
        return id.to_string();
    };
    let mut names: Vec<String> = arg
        .get_long()
        .map(|l| format!("--{l}"))
        .into_iter()
        .collect();
    for a in arg.get_visible_aliases().into_iter().flatten() {
        names.push(format!("--{a}"));
    }
    names.join("/")
}

/// Serde for a seconds value that may be infinite (`--benchmark-grace-period inf`): JSON has no
/// infinity, so it is written as the string `"inf"`.
pub mod seconds {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Number(f64),
        Text(String),
    }

    fn to_repr(v: f64) -> Repr {
        if v.is_infinite() {
            Repr::Text("inf".into())
        } else {
            Repr::Number(v)
        }
    }

    fn from_repr<E: serde::de::Error>(r: Repr) -> Result<f64, E> {
        match r {
            Repr::Number(v) => Ok(v),
            Repr::Text(t) if t == "inf" => Ok(f64::INFINITY),
            Repr::Text(t) => Err(E::custom(format!("not seconds: {t}"))),
        }
    }

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        to_repr(*v).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        from_repr(Repr::deserialize(d)?)
    }

    /// The same for an optional value.
    pub mod option {
        use super::{Repr, from_repr, to_repr};
        use serde::{Deserialize, Deserializer, Serialize, Serializer};

        pub fn serialize<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
            v.map(to_repr).serialize(s)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
            Option::<Repr>::deserialize(d)?.map(from_repr).transpose()
        }
    }
}

/// Serde for the `profile` flags' choice types: a value is its choice's name (`chat`,
/// `round_robin`), read back as clap reads it (case-insensitive, aliases too). So a setting's
/// serialized form is what the command line and a config file spell.
macro_rules! serde_as_choice {
    ($($t:ty),* $(,)?) => {$(
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let v = clap::ValueEnum::to_possible_value(self);
                s.serialize_str(v.as_ref().map_or("", |v| v.get_name()))
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                <$t as clap::ValueEnum>::from_str(&s, true).map_err(|_| {
                    let names: Vec<String> = <$t as clap::ValueEnum>::value_variants()
                        .iter()
                        .filter_map(clap::ValueEnum::to_possible_value)
                        .filter(|v| !v.is_hide_set())
                        .map(|v| v.get_name().to_owned())
                        .collect();
                    serde::de::Error::custom(format!(
                        "'{s}' is not one of {}",
                        names.join(", ")
                    ))
                })
            }
        }
    )*};
}

use super::form::RequestContentTypeArg;
use super::input::SamplingArg;
use super::media::{AudioFormatArg, ImageFormatArg, VideoFormatArg, VideoSynthArg};
use super::random_prompt::{CacheBustArg, CorpusStyleArg};
use super::requests::SelectionArg;
use super::search::{Direction, SearchStyle, StatArg};
use super::sweep::{ConvergenceModeArg, SweepModeArg, SweepTypeArg};
use super::{
    ArrivalPatternArg, ConnectionReuseArg, EndpointTypeArg, ExportLevelArg, IoDriverArg,
    LogLevelArg, ServerMetricsFormatArg, TimestampsArg, TransportArg, UiTypeArg, UrlStrategyArg,
};

serde_as_choice!(
    RequestContentTypeArg,
    SamplingArg,
    AudioFormatArg,
    ImageFormatArg,
    VideoFormatArg,
    VideoSynthArg,
    CacheBustArg,
    CorpusStyleArg,
    SelectionArg,
    Direction,
    SearchStyle,
    StatArg,
    ConvergenceModeArg,
    SweepModeArg,
    SweepTypeArg,
    ArrivalPatternArg,
    ConnectionReuseArg,
    EndpointTypeArg,
    ExportLevelArg,
    IoDriverArg,
    LogLevelArg,
    ServerMetricsFormatArg,
    TimestampsArg,
    TransportArg,
    UiTypeArg,
    UrlStrategyArg,
);

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(line: &str) -> String {
        let argv: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse(&argv).expect_err("refused").to_string()
    }

    /// `chat_completions` is the chat endpoint's route, not a misspelt `completions`.
    #[test]
    fn an_endpoint_named_by_its_route_suggests_the_type_serving_it() {
        let e = error_of("ringperf profile -m m --endpoint-type chat_completions");
        assert!(e.contains("a similar value exists: 'chat'"), "{e}");
        assert!(!e.contains("'completions'\n"), "{e}");
        assert_eq!(
            endpoint_by_route("chat/completions").as_deref(),
            Some("chat")
        );
        assert_eq!(
            endpoint_by_route("Audio-Transcriptions").as_deref(),
            Some("audio-transcription")
        );
        assert_eq!(
            endpoint_by_route("images_generations").as_deref(),
            Some("image-generation")
        );
        assert_eq!(endpoint_by_route("bogus"), None);
        // A value no route ends with keeps the parser's own suggestion.
        let e = error_of("ringperf profile -m m --endpoint-type chatt");
        assert!(e.contains("a similar value exists: 'chat'"), "{e}");
        // Other flags are left alone.
        let e = error_of("ringperf profile -m m --ui chat_completions");
        assert!(!e.contains("'chat'"), "{e}");
    }

    /// Every choice of every `profile` flag is taken from a config file as from the command
    /// line: a file's value is typed through the setting's serialized form, which must read
    /// each choice clap accepts (`wait_for_model_mode: models` was refused by the setting's
    /// serde names once).
    #[test]
    fn every_choice_of_every_flag_is_read_from_a_file() {
        let (cli, given) = parse(&["ringperf".to_owned(), "profile".to_owned()]).expect("parses");
        let Command::Profile(defaults) = cli.command else {
            panic!("profile")
        };
        let cmd = Cli::command();
        let profile = cmd.find_subcommand("profile").expect("profile");
        let mut checked = 0;
        for arg in profile.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            for choice in arg
                .get_possible_values()
                .iter()
                .filter(|c| !c.is_hide_set())
            {
                let name = choice.get_name();
                let setting = (
                    format!("--{long}"),
                    vec![(serde_json::Value::from(name), name.to_owned())],
                );
                if let Err(e) = under_file(&defaults, &given, &[setting]) {
                    panic!("--{long} {name}: {e}");
                }
                checked += 1;
            }
        }
        assert!(checked > 50, "{checked} choices");
    }

    /// `profile --help` opens with the Endpoint options, as AIPerf's does: every `profile`
    /// option has a heading (the `--synthesis-*` ones sat first, under the bare `Options:`).
    #[test]
    fn profile_help_has_no_option_without_a_heading() {
        let mut cmd = Cli::command();
        let profile = cmd.find_subcommand_mut("profile").expect("profile");
        let help = profile.render_long_help().to_string();
        let headings: Vec<&str> = help
            .lines()
            .filter(|l| !l.starts_with(' ') && l.ends_with(':') && !l.is_empty())
            .collect();
        assert_eq!(headings[..2], ["Options:", "Endpoint:"], "{headings:?}");
        let bare: Vec<&str> = help
            .lines()
            .skip_while(|l| *l != "Options:")
            .skip(1)
            .take_while(|l| *l != "Endpoint:")
            .filter(|l| l.trim_start().starts_with('-'))
            .collect();
        assert!(
            bare.iter()
                .all(|l| l.ends_with("--help") || l.ends_with("--version")),
            "{bare:?}"
        );
        assert!(headings.contains(&"Synthesis:"), "{headings:?}");
    }

    /// AIPerf's `-vv` is `--extra-verbose`; the parser alone would read it as `-v -v` and refuse
    /// the second. Past a `--` a word is left as written.
    #[test]
    fn double_v_is_extra_verbose() {
        let profile = |line: &str| {
            let argv: Vec<String> = line.split_whitespace().map(String::from).collect();
            profile_args(&argv).map(|(p, given)| (p.extra_verbose, p.verbose, given))
        };
        let (extra, verbose, given) = profile("ringperf profile -m m -vv").expect("parses");
        assert!(extra && !verbose);
        assert!(given.contains_key("extra_verbose"), "{given:?}");
        assert!(profile("ringperf profile -m m --extra-verbose").unwrap().0);
        assert!(!profile("ringperf profile -m m -v").unwrap().0);
        let argv: Vec<String> = "ringperf profile -m m -vv"
            .split_whitespace()
            .map(String::from)
            .collect();
        assert!(crate::cli::reject_unsupported(&argv).is_ok());
    }
}
