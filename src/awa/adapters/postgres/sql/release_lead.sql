-- Purpose: give up a leadership at once, if `owner` holds it (a leader shutting down).
-- Parameters: name text, owner text.
-- Transition: none (coordination); the next try_lead.sql from anyone takes the name.
-- Index: leader_pkey.
DELETE FROM awa.leader WHERE name = %(name)s AND owner = %(owner)s
