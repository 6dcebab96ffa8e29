package locking

import "strings"

// hashTag returns the hash tag of key as Redis Cluster computes it: the
// text between the first '{' and the first '}' after it, when not empty.
func hashTag(key string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	closing := strings.IndexByte(key[open+1:], '}')
	if closing <= 0 {
		return "", false
	}
	return key[open+1 : open+1+closing], true
}

// sibling names a key that lives in the same Redis Cluster hash slot as
// key: key+suffix when key carries a hash tag, otherwise "{key}"+suffix (a
// key without a tag hashes as a whole, which is what the tag "{key}"
// hashes). A key that contains '{' or '}' without forming a tag cannot be
// matched that way; give such keys a tag.
func sibling(key, suffix string) string {
	if _, ok := hashTag(key); ok || strings.ContainsAny(key, "{}") {
		return key + suffix
	}
	return "{" + key + "}" + suffix
}

// FenceKey is the counter a fenced Mutex on key increments on every
// acquisition. It shares key's hash slot.
func FenceKey(key string) string { return sibling(key, ":fence") }

// WakeupChannel is the pub/sub channel on which a Mutex made WithWakeups
// announces that key was released.
func WakeupChannel(key string) string { return sibling(key, ":released") }
