//! The environment the configuration is read from: the process's (or a
//! test's), each variable looked up by Tessera's name, then MinIO's.

use std::collections::HashMap;
use std::time::Duration;

use super::units::parse_duration;
use super::{ConfigError, err};
use crate::cli::{self, EnvVar};

/// The process environment (or a test's), read once.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: HashMap<String, String>,
}

impl Env {
    /// The process environment; variables that are not UTF-8 are kept out
    /// (and refused if they are ones Tessera reads).
    pub fn from_process() -> Result<Env, ConfigError> {
        let mut vars = HashMap::new();
        for (k, v) in std::env::vars_os() {
            let Some(k) = k.to_str() else { continue };
            match v.into_string() {
                Ok(v) => {
                    vars.insert(k.to_owned(), v);
                }
                Err(_) if is_known(k) => return err(format!("{k} is not valid UTF-8")),
                Err(_) => {}
            }
        }
        Ok(Env { vars })
    }

    /// An environment of the given pairs.
    #[cfg(test)]
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Env {
        Env {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        }
    }

    /// The value of `var` (Tessera's name first, then the aliases in
    /// order), with the name it came from; empty values count as unset.
    pub fn get(&self, var: &EnvVar) -> Option<(String, &'static str)> {
        std::iter::once(&var.name)
            .chain(var.aliases.iter())
            .find_map(|n| {
                self.vars
                    .get(*n)
                    .filter(|v| !v.is_empty())
                    .map(|v| (v.clone(), *n))
            })
    }

    /// A raw variable (`HOME`, ...).
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

fn is_known(name: &str) -> bool {
    cli::ENV_VARS
        .iter()
        .any(|v| v.name == name || v.aliases.contains(&name))
}

pub fn duration_var(env: &Env, var: &EnvVar, default: Duration) -> Result<Duration, ConfigError> {
    match env.get(var) {
        None => Ok(default),
        Some((v, name)) => parse_duration(&v).map_err(|e| ConfigError(format!("{name}: {e}"))),
    }
}
