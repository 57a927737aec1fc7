package com.example.shop.orders;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Places and cancels orders against the inventory.
 */
public class OrderService {
    private static final BigDecimal FREE_SHIPPING = new BigDecimal("50.00");

    private final OrderRepository repository;
    private final PaymentGateway payments;

    /** Creates a service backed by a repository and a payment gateway. */
    public OrderService(OrderRepository repository, PaymentGateway payments) {
        this.repository = Objects.requireNonNull(repository);
        this.payments = Objects.requireNonNull(payments);
    }

    /**
     * Places an order and charges the customer.
     *
     * @param customerId the paying customer
     * @param lines the ordered lines, not empty
     * @return the stored order
     */
    public Order place(String customerId, List<OrderLine> lines) {
        if (lines.isEmpty()) {
            throw new IllegalArgumentException("an order needs at least one line");
        }
        BigDecimal total = BigDecimal.ZERO;
        for (OrderLine line : lines) {
            total = total.add(line.price().multiply(BigDecimal.valueOf(line.quantity())));
        }
        if (total.compareTo(FREE_SHIPPING) < 0) {
            total = total.add(new BigDecimal("4.99"));
        }
        Order order = new Order(customerId, new ArrayList<>(lines), total);
        payments.charge(customerId, total);
        return repository.save(order);
    }

    /** Cancels an order that has not shipped yet. */
    public boolean cancel(long orderId) {
        Optional<Order> order = repository.find(orderId);
        if (order.isEmpty() || order.get().shipped()) {
            return false;
        }
        payments.refund(order.get().customerId(), order.get().total());
        repository.delete(orderId);
        return true;
    }

    /** A line of an order. */
    public record OrderLine(String sku, int quantity, BigDecimal price) {}

    interface PaymentGateway {
        void charge(String customerId, BigDecimal amount);

        void refund(String customerId, BigDecimal amount);
    }

    enum Status {
        NEW,
        PAID,
        SHIPPED
    }
}
