package locking

import "github.com/redis/go-redis/v9"

// HasWakeHub reports whether rdb has a live wake-up subscription.
func HasWakeHub(rdb redis.UniversalClient) bool {
	wakeHubs.Lock()
	defer wakeHubs.Unlock()
	return wakeHubs.m[rdb] != nil
}

