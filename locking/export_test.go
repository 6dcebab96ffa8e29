package locking

import (
	"github.com/redis/go-redis/v9"
)

// HasWakeHub reports whether rdb has a live wake-up subscription.
func HasWakeHub(rdb redis.UniversalClient) bool {
	wakeHubs.Lock()
	defer wakeHubs.Unlock()
	return wakeHubs.m[rdb] != nil
}

// FenceKey is the fencing counter of a Mutex on key.
func FenceKey(key string) string { return fenceKey(key) }

// WakeupChannel is the channel on which a Mutex on key announces releases.
func WakeupChannel(key string) string { return wakeupChannel(key) }

// Resendable reports whether a Release that failed with err is sent again
// in the background.
func Resendable(err error) bool { return resendable(err) }
