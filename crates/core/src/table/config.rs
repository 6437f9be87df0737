//! The table's config, as Lance's `update_config` / `config` keep it: string
//! entries of the manifest's metadata, changed by a metadata-only version
//! (`lsm_spec.rs` commits it; this module reads and checks it).
//! Two keys ask for automatic cleanup, with Lance's names and meaning:
//! `lance.auto_cleanup.interval` (every how many versions) and
//! `lance.auto_cleanup.older_than` (a duration such as `7days`, `3600s` or
//! `1ms`); with both set, every commit whose version is a multiple of the
//! interval removes the versions older than that (never the latest or a
//! tagged one) once it is published, as [`NativeTable::cleanup_sync`] does,
//! except that a file no version names stays until it is
//! [`UNVERIFIED_MIN_AGE`] old (Lance's rule, which keeps another process's
//! commit in flight whole). A server serves its tables without that hook:
//! its background cleanup takes the table's `older_than` as the retention.

use std::collections::BTreeMap;
use std::time::Duration;

use super::NativeTable;
use crate::error::{Error, Result};

/// Every how many versions automatic cleanup runs (Lance's key).
pub const AUTO_CLEANUP_INTERVAL: &str = "lance.auto_cleanup.interval";
/// How old a version must be for automatic cleanup to remove it (Lance's key).
pub const AUTO_CLEANUP_OLDER_THAN: &str = "lance.auto_cleanup.older_than";

/// How old a file no version names must be before a cleanup that follows a
/// table's config removes it (Lance keeps such "unverified" files 7 days
/// whatever the cutoff): another process's commit in flight keeps its files.
pub const UNVERIFIED_MIN_AGE: Duration = Duration::from_secs(7 * 86_400);

/// Keys that other parts of memwal own: `update_config` refuses them.
const RESERVED: [&str; 3] = ["memwal.", crate::lsm::SPEC_KEY, "lance-schema:"];

/// A table's automatic cleanup, when its config asks for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoCleanup {
    /// Runs after every commit of a version that is a multiple of this.
    pub interval: u64,
    /// Removes the versions older than this.
    pub older_than: Duration,
}

/// The automatic cleanup `metadata` asks for: `None` unless both keys are
/// set; an error names a key whose value is not understood.
pub fn auto_cleanup(metadata: &BTreeMap<String, String>) -> Result<Option<AutoCleanup>> {
    let (Some(i), Some(o)) = (
        metadata.get(AUTO_CLEANUP_INTERVAL),
        metadata.get(AUTO_CLEANUP_OLDER_THAN),
    ) else {
        return Ok(None);
    };
    Ok(Some(AutoCleanup {
        interval: interval(i)?,
        older_than: older_than(o)?,
    }))
}

/// The retention `metadata` sets (`lance.auto_cleanup.older_than`), if any.
pub fn retention(metadata: &BTreeMap<String, String>) -> Result<Option<Duration>> {
    metadata
        .get(AUTO_CLEANUP_OLDER_THAN)
        .map(|v| older_than(v))
        .transpose()
}

fn interval(v: &str) -> Result<u64> {
    match v.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(Error::invalid(format!(
            "{AUTO_CLEANUP_INTERVAL} must be a whole number of versions, at least 1; got '{v}'"
        ))),
    }
}

fn older_than(v: &str) -> Result<Duration> {
    humantime::parse_duration(v.trim()).map_err(|e| {
        Error::invalid(format!(
            "{AUTO_CLEANUP_OLDER_THAN} must be a duration such as '7days', '3600s' or '1ms'; got '{v}': {e}"
        ))
    })
}

/// Checks one entry of an `update_config` (`value` `None`: a removal).
pub(crate) fn check_entry(key: &str, value: Option<&str>) -> Result<()> {
    if key.is_empty() {
        return Err(Error::invalid("update_config: a key is empty"));
    }
    if let Some(r) = RESERVED.iter().find(|r| key.starts_with(*r)) {
        return Err(Error::invalid(format!(
            "update_config: '{key}' is not a config key (keys starting '{r}' belong to memwal itself)"
        )));
    }
    match (key, value) {
        (AUTO_CLEANUP_INTERVAL, Some(v)) => interval(v).map(|_| ()),
        (AUTO_CLEANUP_OLDER_THAN, Some(v)) => older_than(v).map(|_| ()),
        (_, Some("")) => Err(Error::invalid(format!(
            "update_config: the value of '{key}' is empty (remove a key by naming it among the deletions)"
        ))),
        _ => Ok(()),
    }
}

impl NativeTable {
    /// The config of this handle's version (every metadata entry of its
    /// manifest, as Lance's `config()` answers).
    pub fn config_sync(&self) -> Result<BTreeMap<String, String>> {
        Ok(self.read_manifest()?.metadata.clone())
    }

    /// Whether commits of this table run the automatic cleanup its config
    /// asks for (the default). A server turns it off for the tables it
    /// serves: their upkeep does it off the writer's path.
    pub fn set_auto_cleanup(&self, on: bool) {
        self.inner
            .auto_cleanup
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// The retention the latest version's config sets, if any.
    pub fn configured_retention(&self) -> Result<Option<Duration>> {
        retention(&self.read_manifest()?.metadata)
    }

    /// Runs the automatic cleanup `auto` asks for after `version` was
    /// published. The commit stands whatever happens here: a failure is
    /// logged and the next due version tries again.
    pub(crate) fn auto_cleanup_after(&self, version: u64, auto: AutoCleanup) {
        if !version.is_multiple_of(auto.interval) {
            return;
        }
        if !self
            .inner
            .auto_cleanup
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        if let Err(e) = self.cleanup_guarded_sync(auto.older_than, UNVERIFIED_MIN_AGE) {
            log::warn!(
                "table {}: automatic cleanup after version {version} failed (tried again at the next due version): {e}",
                self.inner.name
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn both_keys_ask_for_cleanup_in_lances_formats() {
        assert_eq!(auto_cleanup(&meta(&[])).expect("none"), None);
        assert_eq!(
            auto_cleanup(&meta(&[(AUTO_CLEANUP_INTERVAL, "20")])).expect("half"),
            None
        );
        let a = auto_cleanup(&meta(&[
            (AUTO_CLEANUP_INTERVAL, "20"),
            (AUTO_CLEANUP_OLDER_THAN, "14days"),
        ]))
        .expect("parsed")
        .expect("set");
        assert_eq!(a.interval, 20);
        assert_eq!(a.older_than, Duration::from_secs(14 * 86_400));
        for (v, d) in [
            ("3600s", 3_600_000),
            ("1ms", 1),
            ("0s", 0),
            ("1h 30m", 5_400_000),
        ] {
            assert_eq!(older_than(v).expect(v).as_millis(), d, "{v}");
        }
    }

    #[test]
    fn bad_values_and_reserved_keys_are_named() {
        for (k, v, says) in [
            (AUTO_CLEANUP_INTERVAL, "0", "at least 1"),
            (AUTO_CLEANUP_INTERVAL, "ten", "'ten'"),
            (AUTO_CLEANUP_OLDER_THAN, "soon", "'soon'"),
            ("memwal.flushed_seq", "3", "belong to memwal"),
            (crate::lsm::SPEC_KEY, "{}", "belong to memwal"),
            ("", "x", "empty"),
            ("mine", "", "is empty"),
        ] {
            let e = check_entry(k, Some(v)).expect_err(k).to_string();
            assert!(e.contains(says), "{k}={v}: {e}");
        }
        check_entry("mine", Some("x")).expect("a key of the user's");
        check_entry(AUTO_CLEANUP_OLDER_THAN, None).expect("removal");
    }
}
