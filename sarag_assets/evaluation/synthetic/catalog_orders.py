"""Online orders: delivery, wrong items, refunds, payments."""

from __future__ import annotations

from .model import Archetype, Cause, Domain, Product, Step


def S(canonical: str, *phrasings: str) -> Step:
    return Step(canonical, tuple(phrasings) or (canonical,))


def A(canonical: str, *phrasings: str) -> Step:
    """A step support carries out."""
    return Step(canonical, tuple(phrasings) or (canonical,), actor="agent")


RETURN_LABEL = A(
    "send a prepaid return label",
    "email you a prepaid return label",
    "send a free return label to your inbox",
)
REPLACEMENT = A(
    "ship a replacement at no cost",
    "ship a replacement at no extra cost",
    "send out a free replacement",
    "dispatch a replacement free of charge",
)
REFUND = A(
    "issue a full refund to the original payment method",
    "issue a full refund to your original payment method",
    "refund the full amount to the card you paid with",
    "process a full refund back to the original payment",
)

PRODUCTS = (
    Product("earbuds", "Aurora ANC Earbuds", "electronics", "Aurora", "AU", "the earbuds", "AE-200"),
    Product("monitor", "Kestrel 27-inch Monitor", "electronics", "Kestrel", "KS", "the monitor", "KM-27Q"),
    Product("airfryer", "Brightside Air Fryer", "home", "Brightside", "BS", "the air fryer", "BAF-55"),
    Product("backpack", "Trailhead 45L Backpack", "apparel", "Trailhead", "TH", "the backpack", "TH-45"),
    Product("bulbs", "Lumen Smart Bulb 4-pack", "electronics", "Lumen", "LM", "the bulbs", "LB-4C"),
    Product("keyboard", "Cobalt Mechanical Keyboard", "electronics", "Cobalt", "CO", "the keyboard", "CK-87"),
    Product("sheets", "Willow Bamboo Sheet Set", "home", "Willow", "WL", "the sheets", "WB-Q200"),
    Product("desk", "Zephyr Standing Desk", "furniture", "Zephyr", "ZE", "the desk", "ZD-140"),
    Product("band", "Pebble Fitness Band", "electronics", "Pebble", "PB", "the fitness band", "PB-3"),
    Product("vacuum", "Nova Robot Vacuum", "electronics", "Nova", "NV", "the vacuum", "NR-600"),
    Product("boots", "Summit Hiking Boots", "apparel", "Summit", "SU", "the boots", "SB-9"),
    Product("espresso", "Harbor Espresso Machine", "home", "Harbor", "HB", "the espresso machine", "HE-1500"),
    Product("chair", "Atlas Office Chair", "furniture", "Atlas", "AT", "the chair", "AC-300"),
    Product("kettle", "Copperline Electric Kettle", "home", "Copperline", "CL", "the kettle", "CK-17E"),
)

SHIP = ("order_number", "carrier")
PAY = ("order_number", "payment_method", "amount")

ARCHETYPES = (
    Archetype(
        "delivered_not_received",
        "tracking shows delivered but the package never arrived",
        uses_version=False,
        extras=SHIP,
        says=(
            "tracking for {subj} says delivered but [nothing arrived|I never got it|there's no package]",
            "{subj} [shows|is marked] as delivered [yesterday|two days ago|on Monday] but it's not here",
            "{carrier} says they delivered {subj} but [I've checked everywhere|my neighbours don't have it either]",
        ),
        ask=(
            "{p} marked delivered but never arrived",
            "package says delivered, {p} not received",
            "{p} delivered status but no parcel",
        ),
        causes=(
            Cause(
                "package left at a parcel locker",
                (
                    "The driver left it at a parcel locker nearby because nobody answered",
                    "The carrier's scan shows it was dropped at a pickup locker rather than your door",
                ),
                (
                    S("collect the package from the parcel locker with the pickup code", "pick it up from the locker using the code in your email", "use the pickup code to collect it from the parcel locker"),
                ),
            ),
            Cause(
                "delivered to a wrong address",
                (
                    "The GPS scan shows it was delivered [a few streets away|to the wrong address]",
                    "The driver delivered it to the wrong house",
                ),
                (
                    A("file a claim with the carrier", "open a claim with the carrier", "start a lost-package claim with the carrier"),
                    REPLACEMENT,
                ),
            ),
        ),
    ),
    Archetype(
        "wrong_item",
        "received the wrong item",
        uses_version=False,
        extras=SHIP,
        says=(
            "I ordered {subj} but received [something else|a completely different item|the wrong color]",
            "the box had the wrong [item|model|size] in it instead of {subj}",
            "[got|received] the wrong thing, it's not {subj} at all",
        ),
        ask=(
            "received wrong item instead of {p}",
            "{p} order came with the wrong product",
            "wrong item delivered for {p}",
        ),
        causes=(
            Cause(
                "warehouse picking error",
                (
                    "[It was|That was] a picking error at our warehouse",
                    "Our warehouse packed the wrong item by mistake",
                ),
                (
                    RETURN_LABEL,
                    A("ship the correct item right away", "send the correct item today", "dispatch the right item immediately"),
                ),
            ),
            Cause(
                "mislabelled stock from the supplier",
                (
                    "A batch from the supplier was labelled wrong, so the barcode matched but the contents didn't",
                    "The stock was mislabelled by the supplier",
                ),
                (
                    S("keep or donate the wrong item", "keep or donate the wrong item", "just keep the wrong one or donate it"),
                    REFUND,
                ),
            ),
        ),
    ),
    Archetype(
        "refund_missing",
        "refund not received",
        uses_version=False,
        extras=PAY,
        says=(
            "I returned {subj} [two weeks ago|weeks ago|on the 3rd] and still haven't got my refund",
            "the refund for {subj} [hasn't shown up|isn't on my statement]",
            "you received my return of {subj} but [no refund yet|the money never came back]",
        ),
        ask=(
            "no refund yet for returned {p}",
            "{p} return refund not received",
            "where is my refund for {p}",
        ),
        causes=(
            Cause(
                "refund sent to an expired card",
                (
                    "The refund went to the card used for the order, which has expired, so the bank bounced it",
                    "The card on the order expired and the refund was returned to us",
                ),
                (
                    A("reissue the refund as store credit or bank transfer", "reissue the refund by bank transfer or as store credit", "resend the refund through a different method"),
                ),
            ),
            Cause(
                "return not scanned in at the warehouse",
                (
                    "The return arrived but was never scanned in, so the refund didn't trigger",
                    "Your parcel is at the warehouse but wasn't checked in",
                ),
                (
                    A("have the warehouse check in the return", "ask the warehouse to check the return in manually", "get the return scanned in manually"),
                    REFUND,
                ),
            ),
            Cause(
                "bank processing time for refunds",
                (
                    "The refund was issued on our side; banks take 5 to 10 business days to post it",
                    "We processed the refund already; it's the bank's processing time",
                ),
                (
                    S("wait 5 to 10 business days for the bank to post it", "allow 5-10 business days for it to appear", "give the bank up to 10 business days"),
                ),
            ),
        ),
    ),
    Archetype(
        "damaged_item",
        "item arrived damaged",
        uses_version=False,
        extras=SHIP,
        says=(
            "{subj} arrived [damaged|broken|cracked]",
            "the box was [crushed|soaked] and {subj} inside is [broken|dented|scratched]",
            "{subj} came [with a crack|in pieces|with a big dent]",
        ),
        ask=(
            "{p} delivered broken",
            "damaged {p} delivery",
            "{p} came damaged in shipping",
        ),
        causes=(
            Cause(
                "damaged in transit by the carrier",
                (
                    "It was damaged in transit",
                    "The carrier damaged the parcel on the way",
                ),
                (
                    S("send photos of the damage and the box", "reply with a couple of photos of the item and packaging", "upload photos of the damage"),
                    REPLACEMENT,
                ),
            ),
            Cause(
                "insufficient packaging for a fragile item",
                (
                    "That item shipped without the extra padding it needs",
                    "The packaging wasn't suitable for a fragile item",
                ),
                (
                    S("send photos of the damage and the box", "reply with a couple of photos of the item and packaging", "upload photos of the damage"),
                    REFUND,
                ),
            ),
        ),
    ),
    Archetype(
        "payment_declined",
        "payment declined at checkout",
        uses_version=False,
        extras=PAY,
        says=(
            "my [card|payment] keeps getting declined when I try to buy {subj}",
            "checkout fails [every time|at the last step] when I order {subj}",
            "I can't pay for {subj}, [the payment is declined|it says payment failed]",
        ),
        ask=(
            "payment declined buying {p}",
            "checkout fails for {p}",
            "card declined when ordering {p}",
        ),
        errors=(
            "Payment declined ({code})",
            "Transaction failed: {code}",
            "We couldn't process your payment. Error {code}",
        ),
        code_rate=0.9,
        causes=(
            Cause(
                "billing address does not match the card",
                (
                    "The billing address entered doesn't match what the bank has for the card",
                    "[It's|This is] an address mismatch with the card issuer",
                ),
                (
                    S("enter the billing address exactly as on the bank statement", "use the billing address exactly as your bank has it", "correct the billing address to match the card"),
                ),
            ),
            Cause(
                "3-D Secure verification timing out",
                (
                    "The bank's 3-D Secure check times out before you can confirm it",
                    "The card's security verification step isn't completing",
                ),
                (
                    S("approve the payment in the banking app within two minutes", "confirm the payment in your bank's app right away", "approve the 3-D Secure prompt quickly in the banking app"),
                    S("turn off the pop-up blocker for checkout", "allow pop-ups on the checkout page", "disable the pop-up blocker while paying"),
                ),
            ),
        ),
    ),
    Archetype(
        "charged_twice",
        "charged twice for one order",
        uses_version=False,
        extras=PAY,
        says=(
            "I was charged twice for {subj}",
            "my statement shows two [charges|payments] for {subj}[ of {amount}|]",
            "[the same|one] order for {subj} [hit my card twice|was billed twice]",
        ),
        ask=(
            "{p} purchase billed two times",
            "double charge on {p} order",
            "two payments taken for {p}",
        ),
        causes=(
            Cause(
                "pending authorization hold from a failed attempt",
                (
                    "One of them is only a pending authorization from the first attempt that failed",
                    "The second one is an authorization hold, not a real charge",
                ),
                (
                    S("wait 3 to 5 days for the authorization hold to drop", "wait 3-5 days for the hold to drop off", "give it 3 to 5 business days for the pending hold to disappear"),
                ),
            ),
            Cause(
                "duplicate order submitted",
                (
                    "Two orders were created because the checkout was submitted twice",
                    "There are actually two orders on the account",
                ),
                (
                    A("cancel the duplicate order", "cancel the duplicate order", "cancel the second order for you"),
                    REFUND,
                ),
            ),
        ),
    ),
    Archetype(
        "cannot_cancel",
        "cannot cancel the order",
        uses_version=False,
        extras=("order_number",),
        says=(
            "I want to cancel my order for {subj} but the [button|option] is [gone|greyed out]",
            "there's no way to cancel {subj} on the website",
            "I [ordered|bought] {subj} by mistake and can't cancel it",
        ),
        ask=(
            "can't cancel order for {p}",
            "cancel button missing for {p} order",
            "how to cancel {p} order",
        ),
        causes=(
            Cause(
                "order already handed to the warehouse",
                (
                    "The order has already gone to the warehouse for packing, so it can't be cancelled online",
                    "It's already in fulfilment",
                ),
                (
                    S("refuse the delivery or return it when it arrives", "refuse the parcel at delivery or send it back", "return it once it arrives"),
                    REFUND,
                ),
            ),
        ),
    ),
    Archetype(
        "promo_rejected",
        "promo code not accepted",
        uses_version=False,
        extras=PAY,
        says=(
            "the promo code won't work for {subj}",
            "[your|the] discount code [says invalid|is rejected] when I add {subj} to the cart",
            "I got a coupon but it doesn't apply to {subj}",
        ),
        ask=(
            "promo code not working on {p}",
            "discount code rejected for {p}",
            "{p} coupon won't apply",
        ),
        errors=("Code not valid ({code})", "This promotion cannot be applied: {code}"),
        code_rate=0.8,
        causes=(
            Cause(
                "item excluded from the promotion",
                (
                    "That item is excluded from the promotion",
                    "The promotion doesn't cover that brand",
                ),
                (
                    A("apply a goodwill discount manually", "apply a goodwill discount to the order", "add a manual discount instead"),
                ),
            ),
            Cause(
                "minimum order value not reached",
                (
                    "The code needs a minimum order value",
                    "The coupon only works above a minimum basket total",
                ),
                (
                    S("add items to reach the minimum order value", "add something to reach the minimum", "raise the basket above the minimum"),
                ),
            ),
        ),
    ),
    Archetype(
        "stuck_in_transit",
        "order stuck in transit",
        uses_version=False,
        extras=SHIP,
        says=(
            "my order for {subj} has been stuck [in transit|at \"label created\"] for [a week|ten days|ages]",
            "tracking for {subj} hasn't updated [in days|since last week]",
            "{carrier} tracking for {subj} is frozen",
        ),
        ask=(
            "{p} order stuck in transit",
            "tracking not updating for {p}",
            "{p} shipment hasn't moved for days",
        ),
        causes=(
            Cause(
                "address failed carrier validation",
                (
                    "The carrier couldn't validate the address, so the parcel is on hold",
                    "The parcel is held because the address didn't validate",
                ),
                (
                    S("confirm the full address with the apartment number", "confirm your full address including the flat number", "add the missing apartment number"),
                    A("have the carrier release the held parcel", "ask the carrier to release the parcel", "get the carrier to release it"),
                ),
            ),
            Cause(
                "parcel lost at the sorting hub",
                (
                    "The parcel was lost at the sorting hub",
                    "The carrier confirmed the parcel is lost",
                ),
                (
                    REPLACEMENT,
                ),
            ),
        ),
    ),
    Archetype(
        "missing_parts",
        "item missing parts",
        uses_version=False,
        extras=SHIP,
        says=(
            "{subj} arrived without [the screws|the charging cable|the power cord|some parts]",
            "parts are missing from {subj}[, can't assemble it|]",
            "the box for {subj} is missing [the hardware bag|an accessory]",
        ),
        ask=(
            "{p} missing parts",
            "{p} arrived without accessories",
            "missing pieces in {p} box",
        ),
        causes=(
            Cause(
                "parts bag left out at packing",
                (
                    "The parts bag was left out when it was packed",
                    "The accessories weren't packed",
                ),
                (
                    A("ship the missing parts separately", "send the missing parts separately", "dispatch the missing parts bag"),
                ),
            ),
            Cause(
                "parts packed in a second box",
                (
                    "That item ships in two boxes; the parts are in the second one",
                    "The hardware comes in a second parcel",
                ),
                (
                    S("wait for the second box", "wait for the second box, it's on its way", "wait for the second parcel with the parts"),
                ),
            ),
        ),
    ),
)

DOMAIN = Domain(
    name="orders",
    weight=0.24,
    products=PRODUCTS,
    archetypes=ARCHETYPES,
    failed_fixes=(
        ("check with the neighbours", "asked all my neighbours"),
        ("wait another 24 hours", "waited another day"),
        ("check the spam folder for the email", "checked my spam folder"),
        ("clear the browser cookies and try again", "cleared cookies and tried again"),
        ("use the mobile app instead", "tried the app too"),
        ("log out and back in on the website", "logged out and back in"),
    ),
    brands=("Marketly", "Crate & Co", "ShopSphere"),
    channel_weights=(0.15, 0.5, 0.35),
    version_word="version",
    option_word="plan",
    subjects=("my {product}", "the {product}", "the {product} ({model})", "the {model}", "my {product} order"),
    query_refs=("{product}", "my {product}", "the {product}", "{model}"),
)

CARRIERS = ("ParcelNow", "SwiftShip", "PostExpress", "Roadrunner Freight")
PAYMENTS = ("Visa card", "Mastercard", "PayPal", "gift card", "Amex card")
