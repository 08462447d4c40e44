//! Authentication settings (`--server.authentication*`, `--server.jwt-secret*`,
//! `--server.session-timeout`) and where the JWT secrets come from.

use std::path::{Path, PathBuf};
use std::time::Duration;

use quiver_errors::{Error, ErrorCode, Result};

/// ArangoDB's default lifetime of the tokens `POST /_open/auth` issues.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(3600);
/// The file in the data directory that keeps the generated secret.
pub const GENERATED_SECRET_FILE: &str = "jwt-secret";
/// Largest secret file read.
const MAX_SECRET_FILE_BYTES: u64 = 64 * 1024;

/// Authentication settings.
#[derive(Clone, Debug)]
pub struct AuthConfig {
    /// `--server.authentication` (default true).
    pub enabled: bool,
    /// `--server.authentication-system-only`: only `/_api`, `/_admin` (and `/_db/x/` forms)
    /// need authentication. Default true, as ArangoDB.
    pub system_only: bool,
    /// `--server.jwt-secret`.
    pub jwt_secret: Option<String>,
    /// `--server.jwt-secret-keyfile`.
    pub jwt_secret_keyfile: Option<PathBuf>,
    /// `--server.jwt-secret-folder`: every file a secret, the first by name signs.
    pub jwt_secret_folder: Option<PathBuf>,
    /// Lifetime of user tokens from `POST /_open/auth`.
    pub session_timeout: Duration,
    /// The password `root` gets when it is created (first start).
    pub initial_root_password: String,
}

impl Default for AuthConfig {
    /// Authentication on, a generated secret, root with an empty password.
    fn default() -> AuthConfig {
        AuthConfig {
            enabled: true,
            system_only: true,
            jwt_secret: None,
            jwt_secret_keyfile: None,
            jwt_secret_folder: None,
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            initial_root_password: String::new(),
        }
    }
}

impl AuthConfig {
    /// Authentication off: every request runs as the superuser.
    pub fn disabled() -> AuthConfig {
        AuthConfig {
            enabled: false,
            ..AuthConfig::default()
        }
    }

    /// Whether the secrets come from files that `POST /_admin/server/jwt` can reload.
    pub fn reloadable(&self) -> bool {
        self.jwt_secret_keyfile.is_some() || self.jwt_secret_folder.is_some()
    }

    /// Reads the secrets, in order (the first signs): the folder, else the keyfile, else the
    /// option's value, else the generated secret of `data_dir` (created on first start).
    pub fn load_secrets(&self, data_dir: &Path) -> Result<Vec<Vec<u8>>> {
        if let Some(folder) = &self.jwt_secret_folder {
            let mut files = Vec::new();
            let entries = std::fs::read_dir(folder).map_err(|e| io_error(folder, e))?;
            for entry in entries {
                let entry = entry.map_err(|e| io_error(folder, e))?;
                if entry.file_type().map(|t| t.is_file()).unwrap_or(false) {
                    files.push(entry.path());
                    if files.len() > super::jwt::MAX_SECRETS {
                        return Err(Error::with_message(
                            ErrorCode::BadParameter,
                            format!(
                                "{} holds more than {} secrets",
                                folder.display(),
                                super::jwt::MAX_SECRETS
                            ),
                        ));
                    }
                }
            }
            files.sort();
            return files.iter().map(|f| read_secret(f)).collect();
        }
        if let Some(file) = &self.jwt_secret_keyfile {
            return Ok(vec![read_secret(file)?]);
        }
        if let Some(secret) = &self.jwt_secret {
            return Ok(vec![secret.as_bytes().to_vec()]);
        }
        let file = data_dir.join(GENERATED_SECRET_FILE);
        if file.exists() {
            return Ok(vec![read_secret(&file)?]);
        }
        let mut bytes = [0u8; 32];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
        let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        write_private(&file, secret.as_bytes()).map_err(|e| io_error(&file, e))?;
        Ok(vec![secret.into_bytes()])
    }
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::with_message(
        ErrorCode::BadParameter,
        format!("cannot read JWT secret {}: {e}", path.display()),
    )
}

/// A secret file's content without surrounding whitespace (a trailing newline is common).
fn read_secret(path: &Path) -> Result<Vec<u8>> {
    let len = std::fs::metadata(path)
        .map_err(|e| io_error(path, e))?
        .len();
    if len > MAX_SECRET_FILE_BYTES {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            format!("JWT secret file {} is too large", path.display()),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
    let trimmed = bytes.trim_ascii();
    if trimmed.is_empty() {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            format!("JWT secret file {} is empty", path.display()),
        ));
    }
    Ok(trimmed.to_vec())
}

/// Writes a file only its owner may read.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_secret_is_kept_in_the_data_directory() {
        let dir = tempfile::tempdir().unwrap();
        let config = AuthConfig::default();
        let first = config.load_secrets(dir.path()).unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].len(), 64);
        assert_eq!(config.load_secrets(dir.path()).unwrap(), first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(GENERATED_SECRET_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn folder_keyfile_and_option_in_that_order() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("secrets");
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(folder.join("b"), "second\n").unwrap();
        std::fs::write(folder.join("a"), "first").unwrap();
        let keyfile = dir.path().join("key");
        std::fs::write(&keyfile, " keyed \n").unwrap();
        let mut config = AuthConfig {
            jwt_secret: Some("plain".into()),
            jwt_secret_keyfile: Some(keyfile),
            jwt_secret_folder: Some(folder.clone()),
            ..AuthConfig::default()
        };
        assert_eq!(
            config.load_secrets(dir.path()).unwrap(),
            vec![b"first".to_vec(), b"second".to_vec()]
        );
        config.jwt_secret_folder = None;
        assert_eq!(
            config.load_secrets(dir.path()).unwrap(),
            vec![b"keyed".to_vec()]
        );
        config.jwt_secret_keyfile = None;
        assert_eq!(
            config.load_secrets(dir.path()).unwrap(),
            vec![b"plain".to_vec()]
        );
        std::fs::write(folder.join("c"), "\n").unwrap();
        config.jwt_secret_folder = Some(folder);
        assert!(
            config.load_secrets(dir.path()).is_err(),
            "an empty secret file"
        );
    }
}
