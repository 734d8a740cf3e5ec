// SPDX-License-Identifier: Apache-2.0

package ledger

import (
	"errors"

	"github.com/shoal-dev/shoal/hub/store"
)

// ReservationsWithoutMembers is Reservations decoded without their Members
// (left nil): for a reader that keeps every reservation in memory and
// reads only its gang, assignments, clusters and times — the scheduler's
// cache. A member is about 180 bytes of heap (four names); the 65,000
// reservations of an F-XL run of the scale harness took 86 MB of the
// hub's heap with their members, 47 MB without (docs/scale.md, session
// 21). Nothing is written through it.
func (l *Ledger) ReservationsWithoutMembers() store.Reader[*Reservation] {
	return store.NewReader(l.st, Kind, withoutMembers{})
}

// withoutMembers decodes a stored reservation without its member list.
type withoutMembers struct{}

var errDecodeOnly = errors.New("ledger: reservations without members are only decoded")

func (withoutMembers) Marshal(*Reservation) ([]byte, error) { return nil, errDecodeOnly }

func (withoutMembers) Unmarshal(b []byte) (*Reservation, error) {
	v := struct {
		*Reservation
		Members skippedMembers `json:"members"` // shadows Reservation.Members
	}{Reservation: &Reservation{}}
	if err := store.DecodeJSON(b, &v); err != nil {
		return nil, err
	}
	return v.Reservation, nil
}

// skippedMembers reads past a member list without keeping it.
type skippedMembers struct{}

func (*skippedMembers) UnmarshalJSON([]byte) error { return nil }
