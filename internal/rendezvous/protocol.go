// SPDX-License-Identifier: Apache-2.0

package rendezvous

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
)

// maxLine bounds one protocol line (a Reply for a world of tens of thousands
// of ranks fits).
const maxLine = 16 << 20

// Hello is the line a member sends the master: the ranks it holds and its
// view of the world.
type Hello struct {
	// Rank is the first rank the member holds; it holds Ranks consecutive
	// ranks (its LOCAL_WORLD_SIZE).
	Rank        int    `json:"rank"`
	Ranks       int    `json:"ranks"`
	WorldSize   int    `json:"worldSize"`
	Job         string `json:"job,omitempty"`
	Epoch       string `json:"epoch,omitempty"`
	MemberIndex string `json:"memberIndex,omitempty"`
	Role        string `json:"role,omitempty"`
	Hostname    string `json:"hostname"`
	// IP is the member's address as it sees itself: the local address of
	// its connection to the master.
	IP string `json:"ip"`
}

// describe names the member in messages: "rank 2 (host demo-2, ip 10.0.0.3)".
func (h Hello) describe() string {
	word := "rank"
	if h.Ranks > 1 {
		word = "ranks"
	}
	return fmt.Sprintf("%s %s (host %s, ip %s)", word, rankSpan(h.Rank, h.Ranks), h.Hostname, h.IP)
}

// members is one Member per rank the Hello holds.
func (h Hello) members() []Member {
	out := make([]Member, 0, h.Ranks)
	for r := h.Rank; r < h.Rank+h.Ranks; r++ {
		out = append(out, Member{Rank: r, Hostname: h.Hostname, IP: h.IP, Role: h.Role, MemberIndex: h.MemberIndex})
	}
	return out
}

// Member is one rank of the world.
type Member struct {
	Rank        int    `json:"rank"`
	Hostname    string `json:"hostname"`
	IP          string `json:"ip"`
	Role        string `json:"role,omitempty"`
	MemberIndex string `json:"memberIndex,omitempty"`
}

// Reply is the master's one line to each member: the world in rank order, or
// the error that ended the rendezvous.
type Reply struct {
	World []Member `json:"world,omitempty"`
	Error string   `json:"error,omitempty"`
}

// writeLine sends v as one JSON line.
func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// lineReader reads JSON lines from a connection.
type lineReader struct{ s *bufio.Scanner }

func newLineReader(c net.Conn) *lineReader {
	s := bufio.NewScanner(c)
	s.Buffer(make([]byte, 0, 4096), maxLine)
	return &lineReader{s: s}
}

// next decodes the next line into v; io.EOF when the peer closed.
func (r *lineReader) next(v any) error {
	if !r.s.Scan() {
		if err := r.s.Err(); err != nil {
			return err
		}
		return io.EOF
	}
	return json.Unmarshal(r.s.Bytes(), v)
}
