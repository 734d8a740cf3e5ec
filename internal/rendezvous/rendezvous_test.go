// SPDX-License-Identifier: Apache-2.0

package rendezvous

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// gang is a master listener on loopback and the Configs of its members.
type gang struct {
	ln      net.Listener
	members []Config
}

// newGang makes one Config per member; member i holds ranks [i*lws, (i+1)*lws).
func newGang(t *testing.T, members, lws int) *gang {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	g := &gang{ln: ln}
	for i := range members {
		g.members = append(g.members, Config{MasterAddr: "localhost", MasterPort: ln.Addr().(*net.TCPAddr).Port,
			WorldSize: members * lws, Rank: i * lws, LocalWorldSize: lws, Job: "demo", MemberIndex: strconv.Itoa(i),
			Role: "worker", Hostname: fmt.Sprintf("demo-%d", i), Timeout: 10 * time.Second})
	}
	g.members[0].Listener = ln
	return g
}

// run runs every member at once and returns each one's output and error.
func (g *gang) run(t *testing.T) ([]string, []error) {
	outs, errs := make([]bytes.Buffer, len(g.members)), make([]error, len(g.members))
	var wg sync.WaitGroup
	for i, cfg := range g.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Run(t.Context(), cfg, &outs[i])
		}()
	}
	wg.Wait()
	s := make([]string, len(outs))
	for i := range outs {
		s[i] = outs[i].String()
	}
	return s, errs
}

func TestWorldComplete(t *testing.T) {
	g := newGang(t, 4, 1)
	outs, errs := g.run(t)
	want := "rank=0 hostname=demo-0 ip=127.0.0.1 role=worker member=0\n" +
		"rank=1 hostname=demo-1 ip=127.0.0.1 role=worker member=1\n" +
		"rank=2 hostname=demo-2 ip=127.0.0.1 role=worker member=2\n" +
		"rank=3 hostname=demo-3 ip=127.0.0.1 role=worker member=3\n" +
		"rendezvous complete: world size 4\n"
	for i := range outs {
		if errs[i] != nil {
			t.Errorf("member %d: %v", i, errs[i])
		}
		if outs[i] != want {
			t.Errorf("member %d printed\n%s\nwant\n%s", i, outs[i], want)
		}
	}
}

func TestSeveralRanksPerMember(t *testing.T) {
	g := newGang(t, 2, 3)
	g.members[1].Role = "launcher"
	outs, errs := g.run(t)
	want := "rank=0 hostname=demo-0 ip=127.0.0.1 role=worker member=0\n" +
		"rank=1 hostname=demo-0 ip=127.0.0.1 role=worker member=0\n" +
		"rank=2 hostname=demo-0 ip=127.0.0.1 role=worker member=0\n" +
		"rank=3 hostname=demo-1 ip=127.0.0.1 role=launcher member=1\n" +
		"rank=4 hostname=demo-1 ip=127.0.0.1 role=launcher member=1\n" +
		"rank=5 hostname=demo-1 ip=127.0.0.1 role=launcher member=1\n" +
		"rendezvous complete: world size 6\n"
	for i := range outs {
		if errs[i] != nil || outs[i] != want {
			t.Errorf("member %d: err %v, printed\n%s\nwant\n%s", i, errs[i], outs[i], want)
		}
	}
}

func TestWrongWorldSizeFails(t *testing.T) {
	t.Parallel()
	g := newGang(t, 3, 1)
	g.members[2].WorldSize = 4
	outs, errs := g.run(t)
	var mm *MismatchError
	if !errors.As(errs[0], &mm) || mm.Var != EnvWorldSize || mm.Got != "4" || mm.Want != "3" {
		t.Fatalf("master: got %v, want a WORLD_SIZE mismatch 4 vs 3", errs[0])
	}
	const msg = "rank 2 (host demo-2, ip 127.0.0.1) has WORLD_SIZE=4 but rank 0 (the master) has WORLD_SIZE=3"
	if errs[0].Error() != msg {
		t.Errorf("master: %q, want %q", errs[0], msg)
	}
	var me *MasterError
	if !errors.As(errs[2], &me) || me.Message != msg {
		t.Errorf("member 2: got %v, want the master's error %q", errs[2], msg)
	}
	for i := range outs {
		if outs[i] != "" {
			t.Errorf("member %d printed %q after a failed rendezvous", i, outs[i])
		}
	}
}

func TestStrangersAreRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		stranger func(*Config)
		want     string
	}{
		{"another job", func(c *Config) { c.Job = "other" }, `has SHOAL_JOB="other" but rank 0 (the master) has SHOAL_JOB="demo"`},
		{"another epoch", func(c *Config) { c.Epoch = "1" }, `has SHOAL_EPOCH="1" but rank 0 (the master) has SHOAL_EPOCH="2"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newGang(t, 2, 1)
			for i := range g.members {
				g.members[i].Epoch = "2"
			}
			master := make(chan error, 1)
			var out bytes.Buffer
			go func() { master <- Run(t.Context(), g.members[0], &out) }()
			stranger := g.members[1]
			c.stranger(&stranger)
			err := Run(t.Context(), stranger, &bytes.Buffer{})
			var me *MasterError
			if !errors.As(err, &me) || !strings.HasSuffix(me.Message, c.want) {
				t.Fatalf("stranger: got %v, want the master's refusal ending %q", err, c.want)
			}
			if err := Run(t.Context(), g.members[1], &bytes.Buffer{}); err != nil {
				t.Fatalf("member 1 after the stranger: %v", err)
			}
			if err := <-master; err != nil {
				t.Fatalf("master: %v", err)
			}
			if !strings.HasSuffix(out.String(), "rendezvous complete: world size 2\n") {
				t.Errorf("master printed %q", out.String())
			}
		})
	}
}

func TestTimeoutNamesMissingRanks(t *testing.T) {
	t.Parallel()
	g := newGang(t, 4, 1)
	g.members[0].Timeout = 500 * time.Millisecond
	g.members = g.members[:3] // rank 3 never comes
	outs, errs := g.run(t)
	var te *TimeoutError
	if !errors.As(errs[0], &te) {
		t.Fatalf("master: got %v, want a TimeoutError", errs[0])
	}
	const msg = "rank 0: 3 of 4 ranks joined after 500ms; missing ranks [3]"
	if errs[0].Error() != msg {
		t.Errorf("master: %q, want %q", errs[0], msg)
	}
	for i := 1; i < 3; i++ {
		var me *MasterError
		if !errors.As(errs[i], &me) || me.Message != msg {
			t.Errorf("member %d: got %v, want the master's %q", i, errs[i], msg)
		}
		if outs[i] != "" {
			t.Errorf("member %d printed %q", i, outs[i])
		}
	}
}

func TestDuplicateRankFails(t *testing.T) {
	t.Parallel()
	g := newGang(t, 3, 1)
	g.members[2].Rank, g.members[2].MemberIndex = 1, "2"
	_, errs := g.run(t)
	var re *RankError
	if !errors.As(errs[0], &re) || re.Rank != 1 || re.Holder == nil {
		t.Fatalf("master: got %v, want rank 1 claimed twice", errs[0])
	}
	if !strings.HasPrefix(errs[0].Error(), "rank 1 claimed twice: by rank 1 (host demo-") {
		t.Errorf("master: %q", errs[0])
	}
	for i := 1; i < 3; i++ {
		if errs[i] == nil {
			t.Errorf("member %d: no error", i)
		}
	}
}

func TestRankOutsideWorldFails(t *testing.T) {
	t.Parallel()
	g := newGang(t, 2, 1)
	g.members[1].Rank = 2
	_, errs := g.run(t)
	var re *RankError
	if !errors.As(errs[0], &re) || re.Rank != 2 || re.Holder != nil {
		t.Fatalf("master: got %v, want rank 2 outside the world", errs[0])
	}
	const msg = "rank 2 (host demo-1, ip 127.0.0.1) claims rank 2, outside a world of size 2"
	if errs[0].Error() != msg {
		t.Errorf("master: %q, want %q", errs[0], msg)
	}
}

func TestNoMasterTimesOut(t *testing.T) {
	g := newGang(t, 2, 1)
	_ = g.ln.Close() // nothing listens on the port
	cfg := g.members[1]
	cfg.Timeout = 300 * time.Millisecond
	start := time.Now()
	var out bytes.Buffer
	err := Run(t.Context(), cfg, &out)
	var ce *ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a ConnectError", err)
	}
	if !strings.HasPrefix(err.Error(), "rank 1: could not reach the master at localhost:") ||
		!strings.Contains(err.Error(), "after 300ms") {
		t.Errorf("message %q", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %s, want about 300ms", d)
	}
}

func TestMemberLeavesAndJoinsAgain(t *testing.T) {
	m := &master{cfg: Config{WorldSize: 2, Job: "demo"}, holders: map[int]*peer{}, joined: map[*peer]bool{}}
	h := Hello{Rank: 1, Ranks: 1, WorldSize: 2, Job: "demo", Hostname: "demo-1"}
	first, _ := net.Pipe()
	second, _ := net.Pipe()
	p1, p2 := &peer{conn: first}, &peer{conn: second}
	if err := m.join(p1, h); err != nil {
		t.Fatal(err)
	}
	m.leave(p1)
	if err := m.join(p2, h); err != nil {
		t.Fatalf("join again after leaving: %v", err)
	}
	if m.holders[1] != p2 || len(m.joined) != 1 {
		t.Errorf("holders %v joined %v", m.holders, m.joined)
	}
	if err := m.join(&peer{conn: first}, h); err == nil {
		t.Error("a second live member with rank 1 joined")
	}
}

func TestRankList(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{{[]int{3}, "3"}, {[]int{1, 2, 5, 6, 7, 9}, "1-2 5-7 9"}, {nil, ""}} {
		if got := rankList(c.in); got != c.want {
			t.Errorf("rankList(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// The master's own member joins with the same timeout as the master; the
// master's verdict must still count it (it joined), however the two timers
// race.
func TestTimeoutCountsTheMastersOwnMember(t *testing.T) {
	t.Parallel()
	for range 5 {
		g := newGang(t, 2, 1)
		g.members[0].Timeout = 200 * time.Millisecond
		err := Run(t.Context(), g.members[0], &bytes.Buffer{})
		const msg = "rank 0: 1 of 2 ranks joined after 200ms; missing ranks [1]"
		if err == nil || err.Error() != msg {
			t.Fatalf("got %v, want %q", err, msg)
		}
	}
}

func TestMasterThatCannotReachItselfSaysBoth(t *testing.T) {
	t.Parallel()
	g := newGang(t, 2, 1)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_ = closed.Close()
	cfg := g.members[0]
	cfg.MasterAddr, cfg.MasterPort = "127.0.0.1", closed.Addr().(*net.TCPAddr).Port // not where it listens
	cfg.Timeout = 300 * time.Millisecond
	err = Run(t.Context(), cfg, &bytes.Buffer{})
	var te *TimeoutError
	var ce *ConnectError
	if !errors.As(err, &te) || !errors.As(err, &ce) {
		t.Fatalf("got %v, want the master's timeout and its member's connect error", err)
	}
	if !strings.Contains(err.Error(), "missing ranks [0-1]") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("message %q", err)
	}
}
