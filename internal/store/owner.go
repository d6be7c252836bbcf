package store

import (
	"database/sql"
	"errors"
	"fmt"
)

// SetRunOwner records the process executing a run, in the form the
// caller chose (see cleanup.Owner).
func (s *Store) SetRunOwner(id int64, owner string) error {
	res, err := s.db.Exec(`UPDATE runs SET owner = ? WHERE id = ?`, owner, id)
	if err != nil {
		return fmt.Errorf("set owner of run %d: %w", id, err)
	}
	if err := expectOneRow(res, ErrRunNotFound); err != nil {
		return fmt.Errorf("set owner of run %d: %w", id, err)
	}
	return nil
}

// ClaimRun makes owner the process executing run id and marks the run
// running again, if mayTake, shown the run's status and current owner,
// agrees. The check and the claim are one write transaction, so of two
// processes claiming the same run at once only one succeeds.
func (s *Store) ClaimRun(id int64, owner string, mayTake func(status, prevOwner string) error) error {
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("claim run %d: %w", id, err)
	}
	defer tx.Rollback()
	var status, prev string
	err = tx.QueryRow(`SELECT status, owner FROM runs WHERE id = ?`, id).Scan(&status, &prev)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("claim run %d: %w", id, ErrRunNotFound)
	}
	if err != nil {
		return fmt.Errorf("claim run %d: %w", id, err)
	}
	if err := mayTake(status, prev); err != nil {
		return err
	}
	if _, err := tx.Exec(`UPDATE runs SET owner = ?, status = 'running', finished = NULL WHERE id = ?`, owner, id); err != nil {
		return fmt.Errorf("claim run %d: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("claim run %d: commit: %w", id, err)
	}
	return nil
}
