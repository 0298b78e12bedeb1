//! The Sigstore bundle JSON (`model.sig`) of the `model_signing` key method.
//!
//! Written as `sigstore_models` (pydantic) writes it in
//! `model_signing/_signing/sign_sigstore_pb.py` (`Signature.write`:
//! `bundle.to_json()`, compact, no trailing newline, fields in declaration order):
//!
//! ```json
//! {"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json",
//!  "verificationMaterial":{"publicKey":{"hint":"<hex>"},"tlogEntries":[]},
//!  "dsseEnvelope":{"payload":"<base64>","payloadType":"application/vnd.in-toto+json",
//!                  "signatures":[{"sig":"<base64 DER>","keyid":""}]}}
//! ```
//!
//! Bytes fields are standard base64 with padding (`sigstore_models/_core.py`,
//! `ProtoBytes`). Reading is as strict as the reference's: the models forbid
//! unknown fields (`extra="forbid"`), the media type must be the v0.3 one
//! (`sign_sigstore_pb.py`), exactly one verification material and one content
//! (`sigstore_models/bundle/v1`), and the first DSSE signature is the one checked.

use anyhow::{Context, Result, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dsse::IN_TOTO_PAYLOAD_TYPE;

/// The bundle media type the `model_signing` key method writes and requires.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Bundle {
    media_type: String,
    verification_material: VerificationMaterial,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message_signature: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dsse_envelope: Option<Envelope>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct VerificationMaterial {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    public_key: Option<PublicKeyIdentifier>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    x509_certificate_chain: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    certificate: Option<Value>,
    /// Older writers left it out; `Signature.read` in the reference defaults it to `[]`.
    #[serde(default)]
    tlog_entries: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timestamp_verification_data: Option<Value>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PublicKeyIdentifier {
    #[serde(default)]
    hint: Option<String>,
    /// Older protobuf-written bundles carried these; the reference drops them on read.
    #[serde(default, skip_serializing, rename = "rawBytes")]
    _raw_bytes: Option<Value>,
    #[serde(default, skip_serializing, rename = "keyDetails")]
    _key_details: Option<Value>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Envelope {
    payload: String,
    payload_type: String,
    signatures: Vec<EnvelopeSignature>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvelopeSignature {
    sig: String,
    #[serde(default)]
    keyid: Option<String>,
}

/// A bundle read and checked for form, its base64 fields decoded.
#[derive(Clone, Debug)]
pub struct ParsedBundle {
    /// `verificationMaterial.publicKey.hint`, if present and not empty.
    pub key_hint: Option<String>,
    /// The DSSE payload (the in-toto statement JSON).
    pub payload: Vec<u8>,
    /// The first DSSE signature, DER.
    pub signature_der: Vec<u8>,
}

/// The bundle JSON for a signed payload.
pub fn write_bundle(key_hint: &str, payload: &[u8], signature_der: &[u8]) -> String {
    let bundle = Bundle {
        media_type: BUNDLE_MEDIA_TYPE.to_string(),
        verification_material: VerificationMaterial {
            public_key: Some(PublicKeyIdentifier {
                hint: Some(key_hint.to_string()),
                _raw_bytes: None,
                _key_details: None,
            }),
            x509_certificate_chain: None,
            certificate: None,
            tlog_entries: Vec::new(),
            timestamp_verification_data: None,
        },
        message_signature: None,
        dsse_envelope: Some(Envelope {
            payload: STANDARD.encode(payload),
            payload_type: IN_TOTO_PAYLOAD_TYPE.to_string(),
            signatures: vec![EnvelopeSignature {
                sig: STANDARD.encode(signature_der),
                keyid: Some(String::new()),
            }],
        }),
    };
    serde_json::to_string(&bundle).expect("the bundle always serializes")
}

/// Parses bundle JSON and checks its form (not the signature).
pub fn parse_bundle(text: &str) -> Result<ParsedBundle> {
    let bundle: Bundle = serde_json::from_str(text)
        .context("not a Sigstore bundle of the model_signing key method (JSON shape)")?;
    if bundle.media_type != BUNDLE_MEDIA_TYPE {
        bail!(
            "the bundle mediaType is `{}`, expected `{BUNDLE_MEDIA_TYPE}`",
            bundle.media_type
        );
    }
    let material = bundle.verification_material;
    let materials = [
        material.public_key.is_some(),
        material.x509_certificate_chain.is_some(),
        material.certificate.is_some(),
    ];
    if materials.iter().filter(|m| **m).count() != 1 {
        bail!(
            "the bundle must carry exactly one of publicKey, x509CertificateChain or certificate"
        );
    }
    let Some(public_key) = material.public_key else {
        bail!(
            "the bundle was signed with a certificate (model_signing `certificate` or `sigstore` method); only the `key` method is supported"
        );
    };
    let key_hint = public_key.hint.filter(|h| !h.is_empty());
    let envelope = match (bundle.message_signature, bundle.dsse_envelope) {
        (None, Some(envelope)) => envelope,
        (Some(_), None) => bail!("the bundle holds a messageSignature, not a dsseEnvelope"),
        _ => bail!("the bundle must hold exactly one of messageSignature or dsseEnvelope"),
    };
    if envelope.payload_type != IN_TOTO_PAYLOAD_TYPE {
        bail!(
            "the DSSE payloadType is `{}`, expected `{IN_TOTO_PAYLOAD_TYPE}`",
            envelope.payload_type
        );
    }
    let payload = STANDARD
        .decode(envelope.payload.as_bytes())
        .context("the DSSE payload is not standard padded base64")?;
    let first = envelope
        .signatures
        .first()
        .context("the DSSE envelope has no signature")?;
    let signature_der = STANDARD
        .decode(first.sig.as_bytes())
        .context("the DSSE signature is not standard padded base64")?;
    Ok(ParsedBundle {
        key_hint,
        payload,
        signature_der,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_bundle_has_the_reference_shape() {
        let text = write_bundle("ab", b"{}", &[0x30, 0x00]);
        assert_eq!(
            text,
            r#"{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"ab"},"tlogEntries":[]},"dsseEnvelope":{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":"MAA=","keyid":""}]}}"#
        );
        let parsed = parse_bundle(&text).unwrap();
        assert_eq!(parsed.key_hint.as_deref(), Some("ab"));
        assert_eq!(parsed.payload, b"{}");
        assert_eq!(parsed.signature_der, [0x30, 0x00]);
    }

    #[test]
    fn form_errors_are_named() {
        let good = write_bundle("ab", b"{}", &[0x30, 0x00]);
        let cases = [
            (
                good.replace("bundle.v0.3+json", "bundle.v0.2+json"),
                "mediaType",
            ),
            (good.replace("in-toto+json", "in-toto+jsonx"), "payloadType"),
            (
                good.replace("\"tlogEntries\"", "\"extra\":1,\"tlogEntries\""),
                "unknown field",
            ),
            (good.replace("e30=", "e30"), "base64"),
            (
                good.replace("[{\"sig\":\"MAA=\",\"keyid\":\"\"}]", "[]"),
                "no signature",
            ),
            (
                good.replace("\"publicKey\":{\"hint\":\"ab\"}", "\"certificate\":{}"),
                "certificate",
            ),
        ];
        for (text, reason) in cases {
            let err = format!("{:#}", parse_bundle(&text).unwrap_err());
            assert!(err.contains(reason), "expected `{reason}` in: {err}");
        }
        // A missing hint is accepted, as by the reference (it warns).
        let no_hint = good.replace("{\"hint\":\"ab\"}", "{}");
        assert_eq!(parse_bundle(&no_hint).unwrap().key_hint, None);
    }
}
