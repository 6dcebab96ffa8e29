package redisserver

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a local Redis Cluster of masters without replicas, each a
// private redis-server on a loopback port.
type Cluster struct {
	Nodes []*Server
}

// Addrs lists the nodes' host:port.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Addr())
	}
	return out
}

// Stop stops every node.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		n.Stop()
	}
}

// freeClusterPort finds a free port whose cluster bus port (port+10000) is
// free too.
func freeClusterPort() (int, error) {
	for range 50 {
		p, err := FreePort()
		if err != nil {
			return 0, err
		}
		if p+10000 > 65535 {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+10000)))
		if err != nil {
			continue
		}
		l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("redisserver: no free port pair for a cluster node")
}

// StartCluster starts masters redis-server processes in cluster mode, joins
// them with redis-cli --cluster create (slots spread evenly) and waits
// until every node reports cluster_state:ok. redis-cli refuses fewer than
// three masters, so one or two are joined here instead: each node takes
// an even share of the slots (CLUSTER ADDSLOTSRANGE) and meets the first
// (CLUSTER MEET).
func StartCluster(ctx context.Context, masters int) (*Cluster, error) {
	if masters < 1 {
		return nil, fmt.Errorf("redisserver: a cluster needs at least one master")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("redisserver: redis-cli not on PATH: %w", err)
	}
	c := &Cluster{}
	for range masters {
		var srv *Server
		for attempt := 0; ; attempt++ {
			port, perr := freeClusterPort()
			if perr != nil {
				c.Stop()
				return nil, perr
			}
			srv, err = Start(ctx, Options{Port: port, Args: []string{
				"--cluster-enabled", "yes",
				"--cluster-config-file", "nodes.conf",
				"--cluster-node-timeout", "5000",
			}})
			if err == nil || attempt == 4 {
				break
			}
		}
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, srv)
	}
	if masters < 3 {
		if err := c.assignSlots(ctx); err != nil {
			c.Stop()
			return nil, err
		}
	} else {
		args := append([]string{"--cluster", "create"}, c.Addrs()...)
		args = append(args, "--cluster-replicas", "0", "--cluster-yes")
		if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
			c.Stop()
			return nil, fmt.Errorf("redisserver: redis-cli --cluster create: %w: %s", err, out)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range c.Nodes {
		nc := redis.NewClient(&redis.Options{Addr: n.Addr()})
		for {
			info, _ := nc.ClusterInfo(ctx).Result()
			if strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				nc.Close()
				c.Stop()
				return nil, fmt.Errorf("redisserver: cluster on %v not ok after 30s", c.Addrs())
			}
			time.Sleep(50 * time.Millisecond)
		}
		nc.Close()
	}
	return c, nil
}

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// assignSlots splits the hash slots evenly over the nodes in order and
// joins every node to the first, what redis-cli --cluster create does for
// three or more masters.
func (c *Cluster) assignSlots(ctx context.Context) error {
	n := len(c.Nodes)
	for i, node := range c.Nodes {
		lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n-1
		nc := redis.NewClient(&redis.Options{Addr: node.Addr()})
		err := nc.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err()
		if err == nil && i > 0 {
			err = nc.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(c.Nodes[0].port)).Err()
		}
		nc.Close()
		if err != nil {
			return fmt.Errorf("redisserver: assign slots %d-%d to %s: %w", lo, hi, node.Addr(), err)
		}
	}
	return nil
}
