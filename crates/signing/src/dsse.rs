//! The DSSE envelope's pre-authentication encoding (PAE) and the ECDSA signature over it.
//!
//! What is signed is not the payload but
//! `"DSSEv1" SP len(type) SP type SP len(payload) SP payload`, lengths in ASCII
//! decimal bytes (DSSE v1.0 protocol; `pae` in
//! `model_signing/_signing/sign_sigstore_pb.py`). The reference always puts the
//! in-toto payload type in the PAE, whatever the envelope says, and checks the
//! envelope's `payloadType` separately; doing the same here keeps a wrong
//! `payloadType` a clear error of its own. The signature is ECDSA P-256 with
//! SHA-256 over the PAE bytes, ASN.1 DER encoded (`cryptography`'s
//! `private_key.sign(data, ec.ECDSA(SHA256()))` in `sign_ec_key.py`), not raw r||s.

use anyhow::{Result, anyhow};
use p256::ecdsa::{DerSignature, Signature, signature::Signer, signature::Verifier};

use crate::keys::{PrivateKey, PublicKeyP256};

/// The envelope's `payloadType` for an in-toto statement.
pub const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// The DSSE v1 pre-authentication encoding of `payload` under `payload_type`.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let head = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    );
    let mut out = Vec::with_capacity(head.len() + payload.len());
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(payload);
    out
}

/// Signs the PAE of an in-toto payload; returns the DER signature bytes.
pub fn sign_payload(key: &PrivateKey, payload: &[u8]) -> Vec<u8> {
    let message = pae(IN_TOTO_PAYLOAD_TYPE, payload);
    let signature: DerSignature = key.signing_key().sign(&message);
    signature.as_bytes().to_vec()
}

/// Checks a DER signature over the PAE of an in-toto payload.
pub fn verify_payload(key: &PublicKeyP256, payload: &[u8], der_signature: &[u8]) -> Result<()> {
    let signature = Signature::from_der(der_signature).map_err(|_| {
        anyhow!(
            "the DSSE signature is not an ASN.1 DER ECDSA P-256 signature ({} bytes)",
            der_signature.len()
        )
    })?;
    let message = pae(IN_TOTO_PAYLOAD_TYPE, payload);
    key.verifying_key()
        .verify(&message, &signature)
        .map_err(|_| {
            anyhow!("the DSSE signature does not verify with this public key over the payload")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_matches_the_dsse_spec_example() {
        // DSSE protocol.md test vector.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
    }

    #[test]
    fn signature_is_der_and_verifies() {
        let key = PrivateKey::generate();
        let sig = sign_payload(&key, b"{}");
        assert_eq!(sig[0], 0x30, "DER SEQUENCE");
        verify_payload(&key.public_key(), b"{}", &sig).unwrap();
        let err = verify_payload(&key.public_key(), b"{ }", &sig).unwrap_err();
        assert!(err.to_string().contains("does not verify"));
        let other = PrivateKey::generate();
        assert!(verify_payload(&other.public_key(), b"{}", &sig).is_err());
    }
}
