//! The command line read: the one place the argument parser runs. What was given explicitly is
//! read here too, from the parser's own record of where each value came from, so nothing further
//! down needs the command-line text to know it.

use std::collections::BTreeMap;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches};

use super::{Cli, Command, ProfileArgs};

/// The settings given explicitly, by flag id, each with its values as written (a value with
/// choices spelled as its choice: `HTTP` → `http`).
pub type Given = BTreeMap<String, Vec<String>>;

/// Parses a whole `ringperf …` command line, and what its `profile` subcommand was given
/// (empty for another subcommand).
///
/// # Errors
/// clap's error (also for `--help` and `--version`, which it prints).
pub fn parse(argv: &[String]) -> Result<(Cli, Given), clap::Error> {
    let mut cmd = Cli::command();
    let matches = cmd.try_get_matches_from_mut(argv)?;
    let cli = Cli::from_arg_matches(&matches)?;
    let given = match (matches.subcommand(), cmd.find_subcommand("profile")) {
        (Some(("profile", sub)), Some(profile)) => given_of(profile, sub),
        _ => Given::new(),
    };
    Ok((cli, given))
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

/// `settings` (of which `given` were given) with the values the `profile` flags `words` give
/// (`--streaming`, `--extra-inputs x:1`: a `--variant`'s keys as the user wrote them), each marked
/// given, and the flags `cleared` back at their defaults, not given. The words are parsed on their
/// own and each setting they give is taken over by its flag id (a setting's key in the settings'
/// serialized form), so nothing else of `settings` changes.
///
/// # Errors
/// The words do not parse as `profile` flags, or a cleared name is not one.
pub fn overlay_words(
    settings: &ProfileArgs,
    given: &Given,
    words: &[String],
    cleared: &[String],
) -> Result<(ProfileArgs, Given), clap::Error> {
    let argv: Vec<String> = ["ringperf", "profile"]
        .iter()
        .map(|w| (*w).to_owned())
        .chain(words.iter().cloned())
        .collect();
    let (over, over_given) = profile_args(&argv)?;
    let io = |e: serde_json::Error| clap::Error::raw(clap::error::ErrorKind::Io, e.to_string());
    let mut base = serde_json::to_value(settings).map_err(io)?;
    let over = serde_json::to_value(&over).map_err(io)?;
    let mut given = given.clone();
    for (id, values) in over_given {
        if let (Some(slot), Some(v)) = (base.get_mut(&id), over.get(&id)) {
            *slot = v.clone();
        }
        given.insert(id, values);
    }
    if !cleared.is_empty() {
        let (defaults, _) = profile_args(&argv[..2])?;
        let defaults = serde_json::to_value(&defaults).map_err(io)?;
        for name in cleared {
            let id = id_of_word(name).ok_or_else(|| {
                clap::Error::raw(
                    clap::error::ErrorKind::UnknownArgument,
                    format!("unexpected argument '{name}' found"),
                )
            })?;
            if let (Some(slot), Some(v)) = (base.get_mut(&id), defaults.get(&id)) {
                *slot = v.clone();
            }
            given.remove(&id);
        }
    }
    Ok((serde_json::from_value(base).map_err(io)?, given))
}

/// The ids of the `profile` arguments whose value came from the command line, with their values.
fn given_of(profile: &clap::Command, sub: &ArgMatches) -> Given {
    sub.ids()
        .map(|id| id.as_str())
        .filter(|id| sub.value_source(id) == Some(ValueSource::CommandLine))
        .map(|id| {
            let choices = profile
                .get_arguments()
                .find(|a| a.get_id() == id)
                .map(|a| a.get_possible_values())
                .unwrap_or_default();
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

/// The clap id of the `profile` flag a command-line word spells (`--isl`, `--isl=5`, `-m`,
/// `--no-streaming`), if any.
pub fn id_of_word(word: &str) -> Option<String> {
    static COMMAND: std::sync::LazyLock<clap::Command> = std::sync::LazyLock::new(Cli::command);
    let profile = COMMAND.find_subcommand("profile")?;
    let Some(long) = word.strip_prefix("--") else {
        let mut c = word.strip_prefix('-')?.chars();
        let s = c.next()?;
        return profile
            .get_arguments()
            .find(|arg| arg.get_short() == Some(s))
            .map(|arg| arg.get_id().to_string());
    };
    let long = long.split_once('=').map_or(long, |(f, _)| f);
    profile
        .get_arguments()
        .find(|arg| {
            arg.get_long() == Some(long)
                || arg.get_all_aliases().is_some_and(|al| al.contains(&long))
                || (long.starts_with("no-") && arg.get_long() == Some(&long[3..]))
        })
        .map(|arg| arg.get_id().to_string())
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
