-- The five transactions statement by statement (`protocol: statements`): what the stored
-- procedures in procedures/ do, as one statement a round trip in the order tpcc-mysql issues them
-- (a row at a time, the terminal output read back), for a like-for-like comparison of drivers.
-- Each statement is named by the `-- name:` line above it; %s are the driver's parameters
-- (mysqlclient's text protocol: the client quotes them into the statement). The client ends each
-- transaction with COMMIT or ROLLBACK (autocommit off, as tpcc-mysql runs).

-- New-Order (clause 2.4.2)
-- name: new_order_customer
SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse
  WHERE w_id = %s AND c_w_id = w_id AND c_d_id = %s AND c_id = %s;
-- name: new_order_district
SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = %s AND d_id = %s FOR UPDATE;
-- name: new_order_next_id
UPDATE district SET d_next_o_id = %s + 1 WHERE d_w_id = %s AND d_id = %s;
-- name: new_order_order
INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
  VALUES (%s, %s, %s, %s, NOW(), NULL, %s, %s);
-- name: new_order_new_order
INSERT INTO new_orders (no_o_id, no_d_id, no_w_id) VALUES (%s, %s, %s);
-- name: new_order_item
SELECT i_price, i_name, i_data FROM item WHERE i_id = %s;
-- name: new_order_stock
SELECT s_quantity, s_data,
       CASE %s WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
               WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
               WHEN 9 THEN s_dist_09 ELSE s_dist_10 END
  FROM stock WHERE s_i_id = %s AND s_w_id = %s FOR UPDATE;
-- name: new_order_stock_update
UPDATE stock SET s_quantity = %s, s_ytd = s_ytd + %s, s_order_cnt = s_order_cnt + 1,
                 s_remote_cnt = s_remote_cnt + %s
  WHERE s_i_id = %s AND s_w_id = %s;
-- name: new_order_line
INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
                        ol_quantity, ol_amount, ol_dist_info)
  VALUES (%s, %s, %s, %s, %s, %s, NULL, %s, %s, %s);

-- Payment (clause 2.5.2)
-- name: payment_warehouse_ytd
UPDATE warehouse SET w_ytd = w_ytd + %s WHERE w_id = %s;
-- name: payment_warehouse
SELECT w_street_1, w_street_2, w_city, w_state, w_zip, w_name FROM warehouse WHERE w_id = %s;
-- name: payment_district_ytd
UPDATE district SET d_ytd = d_ytd + %s WHERE d_w_id = %s AND d_id = %s;
-- name: payment_district
SELECT d_street_1, d_street_2, d_city, d_state, d_zip, d_name FROM district WHERE d_w_id = %s AND d_id = %s;
-- name: customers_by_name_count
SELECT COUNT(*) FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_last = %s;
-- name: customers_by_name
SELECT c_id FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_last = %s ORDER BY c_first;
-- name: payment_customer
SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_credit,
       c_credit_lim, c_discount, c_balance, c_since
  FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s FOR UPDATE;
-- name: payment_customer_data
SELECT c_data FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s;
-- name: payment_bad_credit
UPDATE customer SET c_balance = c_balance - %s, c_ytd_payment = c_ytd_payment + %s,
                    c_payment_cnt = c_payment_cnt + 1, c_data = %s
  WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s;
-- name: payment_good_credit
UPDATE customer SET c_balance = c_balance - %s, c_ytd_payment = c_ytd_payment + %s,
                    c_payment_cnt = c_payment_cnt + 1
  WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s;
-- name: payment_history
INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
  VALUES (%s, %s, %s, %s, %s, NOW(), %s, %s);

-- Order-Status (clause 2.6.2)
-- name: order_status_customer
SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s;
-- name: order_status_order
SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = %s AND o_d_id = %s AND o_c_id = %s
  ORDER BY o_id DESC LIMIT 1;
-- name: order_status_lines
SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line
  WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s;

-- Delivery (clause 2.7.4), each of the ten districts in the one transaction
-- name: delivery_oldest
SELECT no_o_id FROM new_orders WHERE no_w_id = %s AND no_d_id = %s ORDER BY no_o_id LIMIT 1 FOR UPDATE;
-- name: delivery_delete
DELETE FROM new_orders WHERE no_w_id = %s AND no_d_id = %s AND no_o_id = %s;
-- name: delivery_order_customer
SELECT o_c_id FROM orders WHERE o_w_id = %s AND o_d_id = %s AND o_id = %s;
-- name: delivery_carrier
UPDATE orders SET o_carrier_id = %s WHERE o_w_id = %s AND o_d_id = %s AND o_id = %s;
-- name: delivery_lines
UPDATE order_line SET ol_delivery_d = NOW() WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s;
-- name: delivery_amount
SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s;
-- name: delivery_customer
UPDATE customer SET c_balance = c_balance + %s, c_delivery_cnt = c_delivery_cnt + 1
  WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s;

-- Stock-Level (clause 2.8.2)
-- name: stock_level_next_id
SELECT d_next_o_id FROM district WHERE d_w_id = %s AND d_id = %s;
-- name: stock_level_low
SELECT COUNT(DISTINCT s.s_i_id)
  FROM order_line AS l JOIN stock AS s ON s.s_w_id = l.ol_w_id AND s.s_i_id = l.ol_i_id
  WHERE l.ol_w_id = %s AND l.ol_d_id = %s AND l.ol_o_id >= %s - 20 AND l.ol_o_id < %s
    AND s.s_quantity < %s;
