"""Business tables with the columns that make a table look like a queue to a careless reader
(status, timestamps, attempts, an error text, a due/next-attempt time, an assignee) and none of
a job queue's meaning: nothing here is claimed by a worker and run."""

from django.db import models


class Customer(models.Model):
    email = models.EmailField(unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField()
    last_login_at = models.DateTimeField(null=True)
    is_active = models.BooleanField(default=True)


class Product(models.Model):
    sku = models.CharField(max_length=40, unique=True)
    name = models.CharField(max_length=200)
    price = models.DecimalField(max_digits=10, decimal_places=2)
    stock = models.IntegerField(default=0)
    updated_at = models.DateTimeField()


class Order(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE)
    status = models.CharField(max_length=20, db_index=True)  # pending … delivered, failed
    total = models.DecimalField(max_digits=10, decimal_places=2)
    placed_at = models.DateTimeField(db_index=True)
    updated_at = models.DateTimeField()
    fulfillment_attempts = models.IntegerField(default=0)
    last_error = models.TextField(blank=True)


class OrderItem(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE)
    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    quantity = models.IntegerField()
    unit_price = models.DecimalField(max_digits=10, decimal_places=2)


class Payment(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE)
    status = models.CharField(max_length=20, db_index=True)  # scheduled, pending, failed, …
    amount = models.DecimalField(max_digits=10, decimal_places=2)
    provider = models.CharField(max_length=30)
    retry_count = models.IntegerField(default=0)
    last_error = models.TextField(blank=True)
    scheduled_at = models.DateTimeField(null=True, db_index=True)
    processed_at = models.DateTimeField(null=True)
    created_at = models.DateTimeField()


class Invoice(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE)
    number = models.CharField(max_length=30, unique=True)
    status = models.CharField(max_length=20)  # draft, open, paid, void, uncollectible
    attempt_count = models.IntegerField(default=0)
    next_payment_attempt_at = models.DateTimeField(null=True)
    issued_at = models.DateTimeField()
    due_at = models.DateTimeField()
    paid_at = models.DateTimeField(null=True)


class Shipment(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE)
    carrier = models.CharField(max_length=30)
    tracking_number = models.CharField(max_length=60)
    status = models.CharField(max_length=20)  # label_created, in_transit, delivered, lost
    shipped_at = models.DateTimeField(null=True)
    estimated_delivery_at = models.DateTimeField(null=True)
    delivered_at = models.DateTimeField(null=True)


class Notification(models.Model):
    """What was sent to a customer (a log, not an outbox: rows are written after sending)."""

    customer = models.ForeignKey(Customer, on_delete=models.CASCADE)
    channel = models.CharField(max_length=10)
    template = models.CharField(max_length=60)
    status = models.CharField(max_length=20)  # sent, delivered, opened, bounced, failed
    sent_at = models.DateTimeField()
    error = models.TextField(blank=True)


class SupportTicket(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE)
    subject = models.CharField(max_length=200)
    status = models.CharField(max_length=20)  # open, in_progress, waiting, resolved, closed
    priority = models.IntegerField(default=0)
    assigned_to = models.CharField(max_length=60, blank=True)
    opened_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    due_at = models.DateTimeField(null=True)
