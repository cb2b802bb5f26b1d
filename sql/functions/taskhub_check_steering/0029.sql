-- Refuse, in one line (22023), a priority or labels a start cannot take:
-- a priority outside 0-9; more than 8 labels; a label that is not
-- 'key=value' with a key of lowercase letters, digits, '_', '.' or '-'
-- (at most 63 bytes, starting with a letter) and a value of 1 to 200 bytes
-- without control characters; a key given twice. Returns the labels in
-- key order (one spelling for each set: rules and counts compare them).
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_check_steering(p_priority integer, p_labels text[])
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_label text;
    v_keys  text[] := '{}';
BEGIN
    IF p_priority IS NOT NULL AND p_priority NOT BETWEEN 0 AND 9 THEN
        RAISE EXCEPTION 'priority must be from 0 to 9 (got %)', p_priority
            USING ERRCODE = '22023';
    END IF;
    IF cardinality(p_labels) > 8 THEN
        RAISE EXCEPTION 'at most 8 labels (got %)', cardinality(p_labels) USING ERRCODE = '22023';
    END IF;
    FOREACH v_label IN ARRAY coalesce(p_labels, '{}') LOOP
        IF v_label IS NULL
           OR v_label !~ '^[a-z][a-z0-9_.-]{0,62}=[^[:cntrl:]]+$'
           OR octet_length(split_part(v_label, '=', 1)) > 63
           OR octet_length(substr(v_label, strpos(v_label, '=') + 1)) > 200 THEN
            RAISE EXCEPTION 'label % is not key=value (a key of a-z, 0-9, _ . - from a letter, '
                            'up to 63 bytes; a value of 1 to 200 bytes, no control characters)',
                coalesce(quote_literal(regexp_replace(left(v_label, 80), '[[:cntrl:]]', '?', 'g')),
                         'NULL')
                USING ERRCODE = '22023';
        END IF;
        IF split_part(v_label, '=', 1) = ANY (v_keys) THEN
            RAISE EXCEPTION 'label key % is given twice',
                quote_literal(split_part(v_label, '=', 1))
                USING ERRCODE = '22023';
        END IF;
        v_keys := v_keys || split_part(v_label, '=', 1);
    END LOOP;
    RETURN (SELECT coalesce(array_agg(l ORDER BY l), '{}') FROM unnest(p_labels) AS l);
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_check_steering(integer, text[]) FROM PUBLIC;
