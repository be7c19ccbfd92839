//! Errors a user can act on: one sentence saying what failed and what to do, with the underlying
//! chain kept as detail for `-v`.

use super::config::Target;
use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

#[derive(Debug)]
pub struct LiveError {
    pub message: String,
    /// The underlying errors, one per line, for `-v`.
    pub detail: Option<String>,
}

impl LiveError {
    pub fn new(message: impl Into<String>) -> LiveError {
        LiveError {
            message: message.into(),
            detail: None,
        }
    }

    pub fn with_detail(mut self, error: &(dyn StdError + 'static)) -> LiveError {
        self.detail = Some(
            chain(error)
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        );
        self
    }
}

impl fmt::Display for LiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for LiveError {}

fn chain<'a>(e: &'a (dyn StdError + 'static)) -> Vec<&'a (dyn StdError + 'static)> {
    let mut out = vec![e];
    let mut cur = e;
    while let Some(next) = cur.source() {
        out.push(next);
        cur = next;
    }
    out
}

/// A request that did not succeed.
#[derive(Debug)]
pub enum Fail {
    /// The server answered with an error status.
    Status(Box<kube::core::Status>),
    /// No answer within `--request-timeout`.
    Timeout(Duration),
    /// The request never got an answer: connection, TLS, credentials.
    Client(kube::Error),
    /// The answer is not what the API promises.
    Decode(serde_json::Error),
}

/// What a TLS failure means for the person at the keyboard. rustls's errors reach us boxed
/// inside the connector's errors, where their type is lost but their text is not.
fn tls_reason(text: &str) -> Option<String> {
    if let Some(rest) = text.split("invalid peer certificate: ").nth(1) {
        // A bad signature from an issuer of the right name: typically a re-created cluster whose
        // new CA has the old one's name.
        return Some(
            if rest.starts_with("UnknownIssuer") || rest.starts_with("BadSignature") {
                "the server's certificate is not signed by a certificate authority the kubeconfig trusts (check the cluster's certificate-authority-data)".into()
            } else if rest.starts_with("NotValidForName")
                || rest.starts_with("certificate not valid for name")
            {
                let names = rest
                    .split("; certificate ")
                    .nth(1)
                    .map(|n| format!(": it {n}"))
                    .unwrap_or_default();
                format!(
                    "the server's certificate is not valid for this address{names} (check the cluster's server, or set tls-server-name)"
                )
            } else if rest.starts_with("Expired") || rest.starts_with("certificate expired") {
                "the server's certificate has expired".into()
            } else if rest.starts_with("NotValidYet")
                || rest.starts_with("certificate not valid yet")
            {
                "the server's certificate is not valid yet (is this machine's clock right?)".into()
            } else if rest.starts_with("Revoked") {
                "the server's certificate has been revoked".into()
            } else {
                format!(
                    "the server's certificate was rejected ({})",
                    first_line(rest)
                )
            },
        );
    }
    if let Some(alert) = text.split("received fatal alert: ").nth(1) {
        let client_cert = [
            "CertificateRequired",
            "BadCertificate",
            "UnknownCA",
            "CertificateExpired",
            "CertificateUnknown",
            "CertificateRevoked",
        ];
        return Some(if client_cert.iter().any(|a| alert.starts_with(a)) {
            format!(
                "the server rejected the client certificate ({alert}): it may have expired; log in again to renew it"
            )
        } else {
            format!("the server ended the TLS handshake ({alert})")
        });
    }
    let lower = text.to_ascii_lowercase();
    (lower.contains("corrupt message")
        || lower.contains("invalidcontenttype")
        || lower.contains("handshake"))
    .then(|| {
        format!(
            "the TLS handshake failed ({}): is the server speaking HTTPS?",
            first_line(text)
        )
    })
}

/// Turns a failed request into one actionable sentence. `what` says what was being done, as in
/// "list pods".
pub fn describe(fail: Fail, target: &Target, what: &str) -> LiveError {
    let server = target.server();
    let context = target
        .context
        .as_deref()
        .map(|c| format!(" (context {c:?})"))
        .unwrap_or_default();
    match fail {
        Fail::Timeout(t) => LiveError::new(format!(
            "the API server at {server}{context} did not answer within {} when asked to {what}: retry, or raise --request-timeout",
            humantime(t)
        )),
        Fail::Decode(e) => LiveError::new(format!(
            "the API server at {server} sent an answer that is not a Kubernetes API object when asked to {what}: is it a Kubernetes API server?"
        ))
        .with_detail(&e),
        Fail::Status(s) => status_error(&s, target, what),
        Fail::Client(e) => client_error(&e, target, what),
    }
}

fn status_error(s: &kube::core::Status, target: &Target, what: &str) -> LiveError {
    let server = target.server();
    let user = target
        .user
        .as_deref()
        .map(|u| format!(" of user {u:?}"))
        .unwrap_or_default();
    let reason = if s.reason.is_empty() {
        String::new()
    } else {
        format!(" {}", s.reason)
    };
    let message = match s.code {
        401 => format!(
            "the API server at {server} rejected the credentials{user} (401 Unauthorized): they may have expired; log in again or refresh the token, then retry"
        ),
        403 => format!(
            "permission denied: cannot {what} (403 Forbidden: {}); see the read-only ClusterRole in docs/live.md",
            s.message
        ),
        404 => format!(
            "cannot {what}: the API server at {server} answers 404 Not Found (is this a Kubernetes API server of a supported version?)"
        ),
        410 => format!(
            "cannot {what}: the list kept expiring while it was read (410 Gone): the cluster changed faster than it could be read page by page; retry"
        ),
        429 => format!(
            "cannot {what}: the API server at {server} is overloaded (429 Too Many Requests); retry later"
        ),
        code => format!(
            "the API server at {server} failed to {what} ({code}{reason}): {}",
            if s.message.is_empty() {
                "no message"
            } else {
                s.message.as_str()
            }
        ),
    };
    LiveError {
        message,
        detail: Some(format!("{s:?}")),
    }
}

fn client_error(e: &kube::Error, target: &Target, what: &str) -> LiveError {
    let server = target.server();
    let context = target
        .context
        .as_deref()
        .map(|c| format!(" (context {c:?})"))
        .unwrap_or_default();
    let user = target
        .user
        .as_deref()
        .map(|u| format!(" of user {u:?}"))
        .unwrap_or_default();
    let mut message = None;
    for cause in chain(e) {
        if let Some(auth) = cause.downcast_ref::<kube::client::AuthError>() {
            let why = match auth {
                kube::client::AuthError::AuthExecRun { cmd, out } => {
                    let stderr = String::from_utf8_lossy(&out.stderr);
                    let said = stderr
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .map(str::trim)
                        .unwrap_or("no message");
                    format!(
                        "the credential plugin {cmd} failed ({}): {said}",
                        out.status
                    )
                }
                other => first_line(&other.to_string()).to_string(),
            };
            message = Some(format!(
                "cannot get credentials{user} for {server}: {why} (log in again, or check the user's exec or auth-provider settings)"
            ));
            break;
        }
        if let Some(why) = tls_reason(&cause.to_string()) {
            message = Some(format!(
                "cannot connect securely to the API server at {server}{context}: {why}"
            ));
            break;
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            let why = match io.kind() {
                K::ConnectionRefused => Some("connection refused"),
                K::TimedOut => Some("the connection timed out"),
                K::ConnectionReset | K::ConnectionAborted | K::UnexpectedEof => {
                    Some("the connection was closed")
                }
                K::HostUnreachable | K::NetworkUnreachable => Some("no route to the host"),
                _ => None,
            };
            if let Some(why) = why {
                message = Some(format!(
                    "cannot reach the API server at {server}{context}: {why} (is the cluster up, and is this the right context?)"
                ));
                break;
            }
        }
        let text = cause.to_string();
        if text.contains("dns error") || text.contains("failed to lookup address") {
            message = Some(format!(
                "cannot reach the API server at {server}{context}: its host name does not resolve (is this the right context?)"
            ));
            break;
        }
    }
    let message = message.unwrap_or_else(|| match e {
        kube::Error::InferKubeconfig(k) => format!(
            "the kubeconfig{context} cannot be used: {}",
            first_line(&k.to_string())
        ),
        other => format!(
            "cannot {what} at {server}{context}: {}",
            first_line(&other.to_string())
        ),
    });
    LiveError::new(message).with_detail(e)
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

fn humantime(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_failures_in_words() {
        let said = |t: &str| tls_reason(t).unwrap_or_default();
        assert!(
            said("invalid peer certificate: UnknownIssuer")
                .contains("not signed by a certificate authority")
        );
        assert!(
            said("invalid peer certificate: BadSignature")
                .contains("not signed by a certificate authority")
        );
        assert_eq!(
            said(
                "invalid peer certificate: certificate not valid for name \"a.example\"; certificate is only valid for DnsName(\"b.example\")"
            ),
            "the server's certificate is not valid for this address: it is only valid for DnsName(\"b.example\") (check the cluster's server, or set tls-server-name)"
        );
        assert!(
            said("invalid peer certificate: certificate expired: verification time 2 (UNIX)")
                .contains("has expired")
        );
        assert!(
            said("invalid peer certificate: certificate not valid yet: verification time 2")
                .contains("not valid yet")
        );
        assert!(
            said("received fatal alert: CertificateRequired")
                .contains("rejected the client certificate")
        );
        assert!(
            said("received corrupt message of type InvalidContentType").contains("speaking HTTPS")
        );
        assert_eq!(tls_reason("connection refused"), None);
    }
}
