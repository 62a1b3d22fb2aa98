package pki

import (
	"crypto/rsa"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/util/keyutil"
)

// TestEnsureServiceAccountKeyIsKept: the first call makes an RSA key and its public half;
// later calls keep the key (tokens issued before a restart stay valid) and rewrite a lost
// sa.pub from it.
func TestEnsureServiceAccountKeyIsKept(t *testing.T) {
	dir := t.TempDir()
	keyFile, pubFile, err := EnsureServiceAccountKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	first := readFile(t, keyFile)
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("sa.key mode: %v %v, want 0600", fi.Mode(), err)
	}
	key, err := keyutil.PrivateKeyFromFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok || rsaKey.N.BitLen() != 2048 {
		t.Fatalf("sa.key is %T, want a 2048-bit RSA key", key)
	}
	pubs, err := keyutil.PublicKeysFromFile(pubFile)
	if err != nil || len(pubs) != 1 || !rsaKey.PublicKey.Equal(pubs[0]) {
		t.Fatalf("sa.pub: %v, %v; want the key's public half", pubs, err)
	}

	if err := os.Remove(pubFile); err != nil {
		t.Fatal(err)
	}
	if _, _, err := EnsureServiceAccountKey(dir); err != nil {
		t.Fatal(err)
	}
	if string(readFile(t, keyFile)) != string(first) {
		t.Error("sa.key changed on the second start")
	}
	pubs, err = keyutil.PublicKeysFromFile(pubFile)
	if err != nil || len(pubs) != 1 || !rsaKey.PublicKey.Equal(pubs[0]) {
		t.Errorf("sa.pub after it was lost: %v, %v", pubs, err)
	}
}

func TestEnsureServiceAccountKeyRefusesAnotherKind(t *testing.T) {
	dir := t.TempDir()
	_, keyPEM, err := newCA("other", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/sa.key", keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := EnsureServiceAccountKey(dir); err == nil {
		t.Error("an ECDSA sa.key was accepted; want an error, not a silently replaced key")
	}
}
