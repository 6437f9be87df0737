//! Name validation (tables, index names, tags): the one gate between user
//! strings and paths.

use crate::error::{Error, Result};

/// Longest accepted table name.
pub const MAX_NAME_LEN: usize = 128;

/// Accepts 1..=128 characters of ASCII letters, digits, `_`, `-` and `.`,
/// never `.`/`..` or a leading dot (so a name can never leave its folder).
pub fn validate_table_name(name: &str) -> Result<()> {
    validate_name("table name", name)
}

/// The same rule for any name that becomes part of a path; `kind` names
/// it in the error ("index name", "tag").
pub fn validate_name(kind: &str, name: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::invalid(format!(
            "invalid {kind} {name:?}: {why}; use 1-{MAX_NAME_LEN} letters, digits, '_', '-' or '.'"
        )))
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > MAX_NAME_LEN {
        return bad("it is too long");
    }
    if name.contains("..") || name.starts_with('.') {
        return bad("it may not start with '.' or contain '..'");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return bad(&format!("character {c:?} is not allowed"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_and_rejects() {
        for ok in ["a", "events", "my_table-2.v1", &"x".repeat(128)] {
            assert!(validate_table_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "../x",
            "a/b",
            "a\\b",
            "..",
            ".hidden",
            "a b",
            "é",
            &"x".repeat(129),
        ] {
            let err = validate_table_name(bad).expect_err(bad);
            assert!(err.to_string().contains("invalid table name"), "{err}");
        }
    }
}
