-- +goose Up
-- The contact every request's User-Agent names (deploy record --contact) becomes a setting a
-- release carries, so that rounds a worker starts name the same contact as rounds run by hand.
--
-- Nullable and without a default: a previous binary, whose INSERT lists its columns and does not
-- name this one, keeps recording releases (NULL), and its SELECTs list their columns too. NULL
-- means the binary's default contact (probe/check.DefaultContact).
ALTER TABLE releases ADD COLUMN contact text;

-- +goose Down
ALTER TABLE releases DROP COLUMN contact;
