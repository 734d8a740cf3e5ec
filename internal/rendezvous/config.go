// SPDX-License-Identifier: Apache-2.0

package rendezvous

import (
	"fmt"
	"net"
	"strconv"
	"time"
)

// Environment variables the program reads (the names the hub sets,
// apis/v1alpha1; TestEnvNamesAreTheContract keeps them equal). The plain names are the torchrun
// and Kubeflow Trainer ones; the PET_* names are the torchrun option
// variables Kubeflow sets; the SHOAL_* names are Shoal's own.
const (
	EnvMasterAddr      = "MASTER_ADDR"
	EnvMasterPort      = "MASTER_PORT"
	EnvWorldSize       = "WORLD_SIZE"
	EnvRank            = "RANK"
	EnvNodeRank        = "NODE_RANK"
	EnvLocalWorldSize  = "LOCAL_WORLD_SIZE"
	EnvPetMasterAddr   = "PET_MASTER_ADDR"
	EnvPetMasterPort   = "PET_MASTER_PORT"
	EnvPetNodeRank     = "PET_NODE_RANK"
	EnvPetNNodes       = "PET_NNODES"
	EnvPetNProcPerNode = "PET_NPROC_PER_NODE"
	EnvJob             = "SHOAL_JOB"
	EnvEpoch           = "SHOAL_EPOCH"
	EnvMemberIndex     = "SHOAL_MEMBER_INDEX"
	EnvRole            = "SHOAL_ROLE"
	EnvTimeout         = "SHOAL_RENDEZVOUS_TIMEOUT"
)

// DefaultTimeout bounds the rendezvous when SHOAL_RENDEZVOUS_TIMEOUT is not set.
const DefaultTimeout = 120 * time.Second

const defaultLocalWorldSize = 1

// Config is what one member needs for the rendezvous.
type Config struct {
	// MasterAddr and MasterPort are where the master (the member holding
	// rank 0) listens; every member, the master included, connects there.
	MasterAddr string
	MasterPort int
	// WorldSize is the number of ranks in the world.
	WorldSize int
	// Rank is the first rank this member holds; it holds LocalWorldSize
	// consecutive ranks.
	Rank           int
	LocalWorldSize int
	// Job, Epoch, MemberIndex and Role identify the member (SHOAL_*); the
	// master refuses a member whose Job or Epoch differs from its own.
	// Empty when not set.
	Job, Epoch, MemberIndex, Role string
	// Hostname is reported to the world; Run fills it from os.Hostname when
	// empty.
	Hostname string
	// Timeout bounds the whole rendezvous.
	Timeout time.Duration
	// Listener, when set, is what the master serves on instead of listening
	// on MasterPort on all addresses (tests).
	Listener net.Listener
}

// IsMaster reports whether this member holds rank 0 and so runs the master.
func (c Config) IsMaster() bool { return c.Rank == 0 }

// MasterHostPort is the address every member connects to.
func (c Config) MasterHostPort() string {
	return net.JoinHostPort(c.MasterAddr, strconv.Itoa(c.MasterPort))
}

// FromEnv reads a Config from the environment through lookup (os.LookupEnv).
// A plain variable and its PET_* alias may both be set but must then agree.
// RANK may be left out when NODE_RANK is set (RANK = NODE_RANK ×
// LOCAL_WORLD_SIZE); when both are set they must agree.
func FromEnv(lookup func(string) (string, bool)) (Config, error) {
	r := envReader{lookup: lookup}
	c := Config{
		MasterAddr:  r.str(EnvMasterAddr, EnvPetMasterAddr),
		MasterPort:  r.num(EnvMasterPort, EnvPetMasterPort, -1),
		WorldSize:   r.num(EnvWorldSize, "", -1),
		Job:         r.str(EnvJob, ""),
		Epoch:       r.str(EnvEpoch, ""),
		MemberIndex: r.str(EnvMemberIndex, ""),
		Role:        r.str(EnvRole, ""),
		Timeout:     DefaultTimeout,
	}
	c.LocalWorldSize = r.num(EnvLocalWorldSize, EnvPetNProcPerNode, defaultLocalWorldSize)
	nodeRank := r.num(EnvNodeRank, EnvPetNodeRank, -1)
	nnodes := r.num(EnvPetNNodes, "", -1)
	c.Rank = r.num(EnvRank, "", -1)
	if v, ok := lookup(EnvTimeout); ok && r.err == nil {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			r.fail(EnvTimeout, "%q is not a positive duration", v)
		}
		c.Timeout = d
	}
	if r.err != nil {
		return Config{}, r.err
	}
	return c, c.check(nodeRank, nnodes)
}

// check validates a Config read from the environment; nodeRank and nnodes
// are -1 when not set.
func (c *Config) check(nodeRank, nnodes int) error {
	switch {
	case c.MasterAddr == "":
		return &ConfigError{Var: EnvMasterAddr, Reason: "not set"}
	case c.MasterPort < 1 || c.MasterPort > 65535:
		return &ConfigError{Var: EnvMasterPort, Reason: "not set or not a port number (1-65535)"}
	case c.WorldSize < 1:
		return &ConfigError{Var: EnvWorldSize, Reason: "not set or not a positive number"}
	case c.LocalWorldSize < 1:
		return &ConfigError{Var: EnvLocalWorldSize, Reason: "must be at least 1"}
	}
	if c.Rank < 0 && nodeRank < 0 {
		return &ConfigError{Var: EnvRank, Reason: "not set (nor " + EnvNodeRank + ")"}
	}
	if nodeRank >= 0 {
		if want := nodeRank * c.LocalWorldSize; c.Rank < 0 {
			c.Rank = want
		} else if c.Rank != want {
			return &ConfigError{Var: EnvRank, Reason: fmt.Sprintf("is %d but %s × %s is %d × %d = %d",
				c.Rank, EnvNodeRank, EnvLocalWorldSize, nodeRank, c.LocalWorldSize, want)}
		}
		if nnodes >= 0 && nodeRank >= nnodes {
			return &ConfigError{Var: EnvNodeRank, Reason: fmt.Sprintf("is %d but %s is %d", nodeRank, EnvPetNNodes, nnodes)}
		}
	}
	if c.Rank+c.LocalWorldSize > c.WorldSize {
		return &ConfigError{Var: EnvRank, Reason: fmt.Sprintf("ranks %s are outside a world of size %d",
			rankSpan(c.Rank, c.LocalWorldSize), c.WorldSize)}
	}
	return nil
}

// envReader reads variables, keeping the first error.
type envReader struct {
	lookup func(string) (string, bool)
	err    error
}

func (r *envReader) fail(name, format string, args ...any) {
	if r.err == nil {
		r.err = &ConfigError{Var: name, Reason: fmt.Sprintf(format, args...)}
	}
}

// str returns the value of name, or of alias when name is not set; both set
// and different is an error.
func (r *envReader) str(name, alias string) string {
	v, ok := r.lookup(name)
	if alias == "" {
		return v
	}
	av, aok := r.lookup(alias)
	switch {
	case ok && aok && v != av:
		r.fail(name, "is %q but %s is %q", v, alias, av)
	case !ok:
		return av
	}
	return v
}

// num is str parsed as a non-negative integer, def when neither is set. An
// alias that is not a number (PET_NPROC_PER_NODE=auto) is not checked.
func (r *envReader) num(name, alias string, def int) int {
	v, ok := r.lookup(name)
	var av string
	if alias != "" {
		if s, aok := r.lookup(alias); aok {
			if _, err := strconv.Atoi(s); err == nil {
				av = s
			}
		}
	}
	if !ok && av == "" {
		return def
	}
	if ok && av != "" && v != av {
		r.fail(name, "is %q but %s is %q", v, alias, av)
		return def
	}
	if !ok {
		v, name = av, alias
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		r.fail(name, "%q is not a non-negative integer", v)
		return def
	}
	return n
}
