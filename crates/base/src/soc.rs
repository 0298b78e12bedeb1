//! Qualcomm SoC ids (`soc_model`) and their Hexagon architecture, from QnnTypes.h, ExecuTorch's
//! `qc_schema.py` and published bundles. `--soc` takes an id or a chip name.

use anyhow::{Result, bail};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Soc {
    pub id: u32,
    pub chips: &'static [&'static str],
    pub htp_arch: u32,
}

pub const KNOWN_SOCS: &[Soc] = &[
    Soc {
        id: 30,
        chips: &["SM8350"],
        htp_arch: 68,
    },
    Soc {
        id: 35,
        chips: &["SM7325"],
        htp_arch: 68,
    },
    Soc {
        id: 36,
        chips: &["SM8450"],
        htp_arch: 69,
    },
    Soc {
        id: 39,
        chips: &["SA8295"],
        htp_arch: 68,
    },
    Soc {
        id: 42,
        chips: &["SM8475"],
        htp_arch: 69,
    },
    Soc {
        id: 43,
        chips: &["SM8550"],
        htp_arch: 73,
    },
    Soc {
        id: 52,
        chips: &["SA8255"],
        htp_arch: 73,
    },
    Soc {
        id: 57,
        chips: &["SM8650"],
        htp_arch: 75,
    },
    Soc {
        id: 60,
        chips: &["SC8380XP"],
        htp_arch: 73,
    },
    Soc {
        id: 68,
        chips: &["SM8635"],
        htp_arch: 73,
    },
    Soc {
        id: 69,
        chips: &["SM8750"],
        htp_arch: 79,
    },
    Soc {
        id: 77,
        chips: &["QCS9075", "QCS9100", "IQ-9075"],
        htp_arch: 73,
    },
    Soc {
        id: 87,
        chips: &["SM8850"],
        htp_arch: 81,
    },
];

impl Soc {
    /// The SDK's folder of this SoC's DSP-side libraries (`lib/hexagon-v73/unsigned`): what
    /// `ADSP_LIBRARY_PATH` names on a board.
    pub fn dsp_lib_dir(&self) -> String {
        format!("lib/hexagon-v{}/unsigned", self.htp_arch)
    }

    /// The HTP skeleton library the DSP loads (`libQnnHtpV73Skel.so`).
    pub fn skel_lib(&self) -> String {
        format!("libQnnHtpV{}Skel.so", self.htp_arch)
    }

    /// The host-side stub that reaches the DSP (`libQnnHtpV73Stub.so`).
    pub fn stub_lib(&self) -> String {
        format!("libQnnHtpV{}Stub.so", self.htp_arch)
    }
}

/// The board the card's bundle is for (IQ-9075, soc 77): what a command that names no model's
/// SoC looks for on a board.
pub fn board() -> Soc {
    KNOWN_SOCS
        .iter()
        .copied()
        .find(|s| s.id == 77)
        .expect("the table lists the card's board")
}

/// Parses `77`, `QCS9075`, `qcs9100`, … into a known SoC; anything else lists the known ones.
pub fn parse_soc(text: &str) -> Result<Soc> {
    let wanted = text.trim();
    let found = KNOWN_SOCS.iter().find(|s| {
        wanted.parse::<u32>().is_ok_and(|id| id == s.id)
            || s.chips.iter().any(|c| c.eq_ignore_ascii_case(wanted))
    });
    match found {
        Some(soc) => Ok(*soc),
        None => bail!("unknown SoC `{wanted}`; known SoCs:\n{}", known_list()),
    }
}

/// A record names a SoC by the table's fields; reading it back looks the id up in the table
/// (a SoC this tool does not know is refused, never made up).
impl<'de> serde::Deserialize<'de> for Soc {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Written {
            id: u32,
        }
        let id = Written::deserialize(d)?.id;
        KNOWN_SOCS
            .iter()
            .find(|s| s.id == id)
            .copied()
            .ok_or_else(|| serde::de::Error::custom(format!("unknown SoC id {id}")))
    }
}

impl std::str::FromStr for Soc {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        parse_soc(s)
    }
}

impl std::fmt::Display for Soc {
    /// `77 (QCS9075, v73)`: the id flags and records use, then the first chip name.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}, v{})", self.id, self.chips[0], self.htp_arch)
    }
}

fn known_list() -> String {
    KNOWN_SOCS
        .iter()
        .map(|s| format!("  {:>3}  {:<28} v{}", s.id, s.chips.join(" / "), s.htp_arch))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every SoC of the table names its own folder and libraries (v75's board never gets v73's).
    #[test]
    fn each_soc_names_its_own_dsp_folder_and_libraries() {
        for soc in KNOWN_SOCS {
            let v = soc.htp_arch;
            assert_eq!(
                soc.dsp_lib_dir(),
                format!("lib/hexagon-v{v}/unsigned"),
                "{soc}"
            );
            assert_eq!(soc.skel_lib(), format!("libQnnHtpV{v}Skel.so"), "{soc}");
            assert_eq!(soc.stub_lib(), format!("libQnnHtpV{v}Stub.so"), "{soc}");
        }
        assert_eq!(board().htp_arch, 73);
    }

    #[test]
    fn id_and_chip_name_resolve_to_the_same_soc() {
        assert_eq!(parse_soc("77").unwrap().htp_arch, 73);
        assert_eq!(parse_soc("qcs9075").unwrap().id, 77);
        assert_eq!(parse_soc("SM8650").unwrap().htp_arch, 75);
    }

    #[test]
    fn a_soc_round_trips_through_json_by_its_id() {
        let soc = parse_soc("77").unwrap();
        let json = serde_json::to_string(&soc).unwrap();
        assert_eq!(serde_json::from_str::<Soc>(&json).unwrap(), soc);
        let err = serde_json::from_str::<Soc>(r#"{"id": 999}"#).unwrap_err();
        assert!(err.to_string().contains("unknown SoC id 999"), "{err}");
    }

    #[test]
    fn unknown_soc_lists_the_known_ones() {
        let err = parse_soc("999").unwrap_err().to_string();
        assert!(err.contains("SM8750") && err.contains("77"), "{err}");
    }
}
