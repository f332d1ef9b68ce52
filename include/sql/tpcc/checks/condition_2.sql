-- Consistency condition 2 (clause 3.3.2.2): for each district, D_NEXT_O_ID - 1 = max(O_ID) =
-- max(NO_O_ID) (the last only while the district has undelivered orders: NULL otherwise).
SELECT d.d_w_id AS w_id, d.d_id AS d_id, d.d_next_o_id - 1 AS next_o_id_minus_1,
       (SELECT MAX(o.o_id) FROM orders AS o WHERE o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id) AS max_o_id,
       (SELECT MAX(n.no_o_id) FROM new_orders AS n WHERE n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id) AS max_no_o_id
FROM district AS d
ORDER BY d.d_w_id, d.d_id
