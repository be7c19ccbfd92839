//! Durations as an operator reads them, in every lease view and status text.

use k8s_openapi::jiff::SignedDuration;

/// A duration as an operator reads it: `850ms`, `5.5s`, `45s`, `3m12s`, `2h5m`, `3d4h`.
pub fn human(d: SignedDuration) -> String {
    if d.is_negative() {
        return format!("-{}", human(d.abs()));
    }
    let ms = d.as_millis();
    let secs = d.as_secs();
    match secs {
        0 if ms < 1000 && ms % 1000 != 0 => format!("{ms}ms"),
        0..10 => {
            let tenths = ms / 100;
            if tenths % 10 == 0 {
                format!("{secs}s")
            } else {
                format!("{}.{}s", tenths / 10, tenths % 10)
            }
        }
        10..60 => format!("{secs}s"),
        60..3600 => format!("{}m{}s", secs / 60, secs % 60),
        3600..86400 => format!("{}h{}m", secs / 3600, secs % 3600 / 60),
        _ => format!("{}d{}h", secs / 86400, secs % 86400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_kubectl_ages() {
        let ms = SignedDuration::from_millis;
        assert_eq!(human(ms(850)), "850ms");
        assert_eq!(human(ms(0)), "0s");
        assert_eq!(human(ms(5_500)), "5.5s");
        assert_eq!(human(ms(2_000)), "2s");
        assert_eq!(human(ms(45_900)), "45s");
        assert_eq!(human(ms(192_000)), "3m12s");
        assert_eq!(human(ms(7_500_000)), "2h5m");
        assert_eq!(human(ms(273_600_000)), "3d4h");
        assert_eq!(human(ms(-30_300)), "-30s");
    }
}
