//! ECDSA P-256 keys in PEM, and the key hint the bundle carries.
//!
//! `model_signing` reads keys with `cryptography`'s `load_pem_private_key` /
//! `load_pem_public_key`, so a private key may be PKCS#8 (`PRIVATE KEY`) or SEC1
//! (`EC PRIVATE KEY`, what `openssl ecparam -genkey` writes, possibly after an
//! `EC PARAMETERS` block), and a public key is a SubjectPublicKeyInfo
//! (`PUBLIC KEY`). The reference accepts P-256, P-384 and P-521; this crate signs
//! and verifies P-256 only (ECDSA with SHA-256) and names any other curve or key
//! type it is handed, so a wrong key fails with a reason rather than "bad key".

use anyhow::{Context, Result, bail};
use p256::ecdsa::{SigningKey, VerifyingKey};
use p256::elliptic_curve::Generate;
use p256::pkcs8::der::asn1::ObjectIdentifier;
use p256::pkcs8::der::pem;
use p256::pkcs8::{
    DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey, LineEnding,
    PrivateKeyInfoRef, SubjectPublicKeyInfoRef,
};
use p256::{PublicKey, SecretKey};
use sha2::{Digest, Sha256};

const ID_EC_PUBLIC_KEY: &str = "1.2.840.10045.2.1";
const PRIME256V1: &str = "1.2.840.10045.3.1.7";

/// A loaded P-256 private key, ready to sign.
#[derive(Clone)]
pub struct PrivateKey {
    signing: SigningKey,
}

/// A loaded P-256 public key, ready to verify.
#[derive(Clone, Debug)]
pub struct PublicKeyP256 {
    verifying: VerifyingKey,
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.debug_struct("PrivateKey")
            .field("public_key_hint", &self.public_key().hint())
            .finish()
    }
}

impl PrivateKey {
    /// Reads a PEM private key: PKCS#8 (`PRIVATE KEY`) or SEC1 (`EC PRIVATE KEY`).
    /// Any `EC PARAMETERS` block before it is skipped, as `openssl ecparam -genkey`
    /// without `-noout` writes one. Encrypted keys are refused: the reference only
    /// decrypts them with a password this tool never asks for.
    pub fn from_pem(pem_text: &str) -> Result<Self> {
        let blocks = pem_blocks(pem_text)?;
        let Some((label, der)) = blocks
            .into_iter()
            .find(|(label, _)| label != "EC PARAMETERS")
        else {
            bail!("the private key PEM holds no key block (only EC PARAMETERS)");
        };
        let secret = match label.as_str() {
            "PRIVATE KEY" => {
                let info = PrivateKeyInfoRef::try_from(der.as_slice())
                    .map_err(|e| anyhow::anyhow!("the PKCS#8 private key is not valid DER: {e}"))?;
                if info.algorithm.oid.to_string() != ID_EC_PUBLIC_KEY {
                    bail!(
                        "the private key is {}, not an elliptic-curve key: only ECDSA P-256 keys are supported",
                        algorithm_name(&info.algorithm.oid)
                    );
                }
                let curve = info
                    .algorithm
                    .parameters_oid()
                    .map_err(|e| anyhow::anyhow!("the PKCS#8 EC key names no curve: {e}"))?;
                require_p256(&curve, "private key")?;
                SecretKey::from_pkcs8_der(&der).map_err(|e| {
                    anyhow::anyhow!("the PKCS#8 P-256 private key is malformed: {e}")
                })?
            }
            "EC PRIVATE KEY" => {
                let parsed = sec1::EcPrivateKey::try_from(der.as_slice()).map_err(|e| {
                    anyhow::anyhow!("the SEC1 EC private key is not valid DER: {e}")
                })?;
                if let Some(params) = parsed.parameters {
                    let curve = params.named_curve().context(
                        "the SEC1 EC private key gives explicit curve parameters, not a named curve",
                    )?;
                    require_p256(&curve, "private key")?;
                }
                SecretKey::from_sec1_der(&der)
                    .map_err(|e| anyhow::anyhow!("the SEC1 P-256 private key is malformed: {e}"))?
            }
            "ENCRYPTED PRIVATE KEY" => bail!(
                "the private key is encrypted; decrypt it first (`openssl pkey -in KEY -out PLAIN`)"
            ),
            "RSA PRIVATE KEY" | "DSA PRIVATE KEY" | "OPENSSH PRIVATE KEY" => bail!(
                "the private key is a {label} block: only ECDSA P-256 keys (PEM `PRIVATE KEY` or `EC PRIVATE KEY`) are supported"
            ),
            other => bail!(
                "the private key PEM block is `{other}`, expected `PRIVATE KEY` (PKCS#8) or `EC PRIVATE KEY` (SEC1)"
            ),
        };
        Ok(Self {
            signing: SigningKey::from(&secret),
        })
    }

    /// A fresh random P-256 key from the operating system's RNG.
    pub fn generate() -> Self {
        Self {
            signing: SigningKey::from(&SecretKey::generate()),
        }
    }

    /// The key as PKCS#8 PEM (`PRIVATE KEY`), LF line endings.
    pub fn to_pkcs8_pem(&self) -> Result<String> {
        let pem = self
            .signing
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|e| anyhow::anyhow!("encoding the private key as PKCS#8 PEM: {e}"))?;
        Ok(pem.to_string())
    }

    /// The public half.
    pub fn public_key(&self) -> PublicKeyP256 {
        PublicKeyP256 {
            verifying: *self.signing.verifying_key(),
        }
    }

    pub(crate) fn signing_key(&self) -> &SigningKey {
        &self.signing
    }
}

impl PublicKeyP256 {
    /// Reads a SubjectPublicKeyInfo PEM (`PUBLIC KEY`), what `openssl ec -pubout` writes.
    pub fn from_pem(pem_text: &str) -> Result<Self> {
        let blocks = pem_blocks(pem_text)?;
        let Some((label, der)) = blocks.into_iter().next() else {
            bail!("the public key PEM holds no block");
        };
        if label != "PUBLIC KEY" {
            bail!(
                "the public key PEM block is `{label}`, expected `PUBLIC KEY` (SubjectPublicKeyInfo, as `openssl ec -pubout` writes)"
            );
        }
        let info = SubjectPublicKeyInfoRef::try_from(der.as_slice()).map_err(|e| {
            anyhow::anyhow!("the public key is not valid SubjectPublicKeyInfo DER: {e}")
        })?;
        if info.algorithm.oid.to_string() != ID_EC_PUBLIC_KEY {
            bail!(
                "the public key is {}, not an elliptic-curve key: only ECDSA P-256 keys are supported",
                algorithm_name(&info.algorithm.oid)
            );
        }
        let curve = info
            .algorithm
            .parameters_oid()
            .map_err(|e| anyhow::anyhow!("the EC public key names no curve: {e}"))?;
        require_p256(&curve, "public key")?;
        let key = PublicKey::from_public_key_der(&der)
            .map_err(|e| anyhow::anyhow!("the P-256 public key is malformed: {e}"))?;
        Ok(Self {
            verifying: VerifyingKey::from(&key),
        })
    }

    /// The key as SubjectPublicKeyInfo PEM, byte for byte what Python
    /// `cryptography` writes with `public_bytes(PEM, SubjectPublicKeyInfo)`:
    /// uncompressed point, 64-column base64, LF, trailing newline.
    pub fn to_pem(&self) -> Result<String> {
        PublicKey::from(&self.verifying)
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| anyhow::anyhow!("encoding the public key as PEM: {e}"))
    }

    /// The bundle's `verificationMaterial.publicKey.hint`: lowercase hex SHA-256 of
    /// the key's SubjectPublicKeyInfo PEM text (not of the DER), as
    /// `model_signing/_signing/sign_ec_key.py` computes it. The hint is
    /// unauthenticated: it only tells which key to try.
    pub fn hint(&self) -> String {
        let pem = self
            .to_pem()
            .expect("a valid P-256 point always encodes as SubjectPublicKeyInfo");
        hex(&Sha256::digest(pem.as_bytes()))
    }

    pub(crate) fn verifying_key(&self) -> &VerifyingKey {
        &self.verifying
    }
}

fn require_p256(curve: &ObjectIdentifier, what: &str) -> Result<()> {
    let oid = curve.to_string();
    if oid == PRIME256V1 {
        return Ok(());
    }
    let name = match oid.as_str() {
        "1.3.132.0.34" => "P-384 (secp384r1)".to_string(),
        "1.3.132.0.35" => "P-521 (secp521r1)".to_string(),
        "1.3.132.0.10" => "secp256k1".to_string(),
        _ => format!("the curve with OID {oid}"),
    };
    bail!("the {what} is on {name}: only P-256 (prime256v1, secp256r1) is supported")
}

fn algorithm_name(oid: &ObjectIdentifier) -> String {
    match oid.to_string().as_str() {
        "1.2.840.113549.1.1.1" => "an RSA key".to_string(),
        "1.3.101.112" => "an Ed25519 key".to_string(),
        "1.3.101.113" => "an Ed448 key".to_string(),
        "1.2.840.10040.4.1" => "a DSA key".to_string(),
        other => format!("a key of algorithm OID {other}"),
    }
}

/// Splits PEM text into its blocks, decoding each: `(label, DER)`.
fn pem_blocks(text: &str) -> Result<Vec<(String, Vec<u8>)>> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let line = line.trim();
        let Some(label) = line
            .strip_prefix("-----BEGIN ")
            .and_then(|rest| rest.strip_suffix("-----"))
        else {
            continue;
        };
        let end = format!("-----END {label}-----");
        let mut block = format!("{line}\n");
        let mut closed = false;
        for inner in lines.by_ref() {
            let inner = inner.trim();
            block.push_str(inner);
            block.push('\n');
            if inner == end {
                closed = true;
                break;
            }
        }
        if !closed {
            bail!("the PEM block `{label}` has no `{end}` line");
        }
        let (_, der) = pem::decode_vec(block.as_bytes())
            .map_err(|e| anyhow::anyhow!("the PEM block `{label}` does not decode: {e}"))?;
        blocks.push((label.to_string(), der));
    }
    if blocks.is_empty() {
        bail!("no PEM block (`-----BEGIN ...-----`) found");
    }
    Ok(blocks)
}

/// Lowercase hex, as Python's `bytes.hex()`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkcs8_round_trip_keeps_the_hint() {
        let key = PrivateKey::generate();
        let again = PrivateKey::from_pem(&key.to_pkcs8_pem().unwrap()).unwrap();
        assert_eq!(key.public_key().hint(), again.public_key().hint());
        let public = PublicKeyP256::from_pem(&key.public_key().to_pem().unwrap()).unwrap();
        assert_eq!(public.hint(), key.public_key().hint());
        assert_eq!(key.public_key().hint().len(), 64);
    }

    #[test]
    fn sec1_key_with_parameters_block_loads() {
        let key = PrivateKey::generate();
        let secret = SecretKey::from_pkcs8_pem(&key.to_pkcs8_pem().unwrap()).unwrap();
        let sec1 = secret.to_sec1_pem(LineEnding::LF).unwrap();
        let with_params = format!(
            "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n{}",
            sec1.as_str()
        );
        let loaded = PrivateKey::from_pem(&with_params).unwrap();
        assert_eq!(loaded.public_key().hint(), key.public_key().hint());
    }

    #[test]
    fn public_pem_is_the_cryptography_layout() {
        let pem = PrivateKey::generate().public_key().to_pem().unwrap();
        let lines: Vec<&str> = pem.lines().collect();
        assert_eq!(lines.first(), Some(&"-----BEGIN PUBLIC KEY-----"));
        assert_eq!(lines.last(), Some(&"-----END PUBLIC KEY-----"));
        assert_eq!(lines[1].len(), 64);
        assert!(pem.ends_with("-----\n"));
        assert!(!pem.contains('\r'));
    }

    #[test]
    fn other_curves_and_types_are_named() {
        // A P-384 SubjectPublicKeyInfo (from `openssl ecparam -name secp384r1`).
        let p384 = "-----BEGIN PUBLIC KEY-----\nMHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEZxduU+MBy3KyJ2FcJ2nbHaIxIIvthUrB\n9JTIr80VbylYf6WNdhYURc9UDldzs+i7tcCiKajNVNDhXwxa7O85Ipg3ho9L5Exa\nCWhjvqeX6rsoswfSbFzo3WFQAccyJqLq\n-----END PUBLIC KEY-----\n";
        let ed25519 = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAZpuX6KneVaaKNRChDJvx4GWf1tyH8A/G6Q98JWDOPNI=\n-----END PUBLIC KEY-----\n";
        let err = format!("{:#}", PublicKeyP256::from_pem(ed25519).unwrap_err());
        assert!(err.contains("Ed25519"), "{err}");
        let err = format!("{:#}", PublicKeyP256::from_pem(p384).unwrap_err());
        assert!(err.contains("P-384"), "{err}");
        let err = format!("{:#}", PrivateKey::from_pem(p384).unwrap_err());
        assert!(err.contains("PUBLIC KEY"), "{err}");
        let err = format!("{:#}", PrivateKey::from_pem("not a key").unwrap_err());
        assert!(err.contains("no PEM block"), "{err}");
    }
}
