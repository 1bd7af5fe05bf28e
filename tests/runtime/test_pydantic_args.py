"""pydantic models as args: the handler receives exactly what the producer's model held, or the
insert is refused with one ``ValidationError`` that names the fields, and nothing is written.
Real pydantic v2 models, on the memory store, SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any
from uuid import UUID

import psycopg
import pytest
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretBytes,
    SecretStr,
    field_serializer,
)

import awa
from awa.adapters.memory import MemoryStore

from .conftest import Backend, reaches, run

S = awa.JobState
PLACED_AT = datetime(2025, 3, 4, 5, 6, 7, 891011, tzinfo=timezone(timedelta(hours=2)))


class Line(BaseModel):
    sku: str
    price: Decimal


class Order(BaseModel):
    """Every way a field can be named apart from its attribute, and types JSON holds as text."""

    user_id: int = Field(alias="userId")
    note: str = Field(validation_alias="noteIn", serialization_alias="noteOut")
    placed_at: datetime
    ref: UUID
    total: Decimal
    lines: list[Line]


def _order() -> Order:
    return Order(
        userId=7,
        noteIn="leave at the door",
        placed_at=PLACED_AT,
        ref=UUID(int=42),
        total=Decimal("12.50"),
        lines=[Line(sku="a-1", price=Decimal("2.50")), Line(sku="b-2", price=Decimal("10.00"))],
    )


class StrictOrder(BaseModel):
    model_config = ConfigDict(strict=True)

    placed_at: datetime
    ref: UUID
    total: Decimal


class Login(BaseModel):
    user: str
    password: SecretStr


class Upload(BaseModel):
    key: SecretBytes


class Reading(BaseModel):
    at: datetime

    @field_serializer("at")
    def _day_only(self, at: datetime) -> str:  # drops the time of day
        return at.date().isoformat()


class Batch(BaseModel):
    readings: list[Reading]


class Draft(BaseModel):
    title: str
    body: str = Field(default="", exclude=True)


class Cached(BaseModel):
    n: int
    _seen: int = PrivateAttr(default=0)


class Ratio(BaseModel):
    value: float


class DiscountedLine(Line):
    discount: Decimal


class Invoice(BaseModel):
    line: Line  # holds a subclass: stored as a Line, it would come back as one


def _cached() -> Cached:
    cached = Cached(n=1)
    cached._seen = 3  # set after construction: the stored JSON does not hold it
    return cached


NOON = datetime(2025, 1, 2, 12, tzinfo=timezone.utc)
MIDNIGHT = datetime(2025, 1, 2, tzinfo=timezone.utc)

# args whose stored JSON would not give the handler the model given, and what the refusal says
LOSSY: list[tuple[str, Any, str]] = [
    ("SecretStr", Login(user="ada", password=SecretStr("hunter2")), "password holds a secret"),
    ("SecretBytes", Upload(key=SecretBytes(b"k")), "key holds a secret"),
    ("field_serializer", Reading(at=NOON), "at would reach the handler changed"),
    (
        "nested",
        Batch(readings=[Reading(at=MIDNIGHT.replace(tzinfo=None)), Reading(at=NOON)]),
        "readings.1.at would reach the handler changed",
    ),
    ("excluded field", Draft(title="t", body="b"), "body would reach the handler changed"),
    ("private attribute", _cached(), "_seen would reach the handler changed"),
    (
        "subclass",
        Invoice(line=DiscountedLine(sku="a", price=Decimal(1), discount=Decimal(0))),
        "line would reach the handler changed",
    ),
    ("infinite float", Ratio(value=float("inf")), "does not validate back (value: Input should"),
]


def test_a_models_aliases_types_and_nested_models_reach_the_handler_as_held(
    backend: Backend,
) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        seen: list[Order] = []

        @client.task(Order)
        async def order(job: awa.Job[Order]) -> None:
            seen.append(job.args)

        await client.start([("default", 1)])
        job = await client.insert(_order())
        assert (await reaches(client, job.id, S.COMPLETED)).attempt == 1
        await client.shutdown()
        assert sorted(job.args) == ["lines", "note", "placed_at", "ref", "total", "user_id"]
        [got] = seen
        assert got == _order()
        assert str(got.total) == "12.50"  # Decimal equality ignores the scale; the text keeps it
        assert got.placed_at.utcoffset() == timedelta(hours=2)

    run(story)


class ByNameToo(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    user_id: int = Field(alias="userId")


class WritesAliases(BaseModel):
    model_config = ConfigDict(serialize_by_alias=True)
    user_id: int = Field(alias="userId")


class ReadsNamesOnly(BaseModel):
    model_config = ConfigDict(validate_by_alias=False, validate_by_name=True)
    user_id: int = Field(alias="userId")


@dataclass
class Envelope:
    order: Order


NAMED: list[Any] = [
    ByNameToo(user_id=1),
    WritesAliases(userId=2),
    ReadsNamesOnly(user_id=3),
    Envelope(order=_order()),
]


@pytest.mark.parametrize("given", NAMED, ids=[type(given).__name__ for given in NAMED])
def test_whatever_a_model_says_of_names_and_aliases_its_handler_gets_it_back(given: Any) -> None:
    async def story() -> None:
        async with awa.AsyncClient(store=MemoryStore()) as client:
            seen: list[Any] = []

            @client.task(type(given))
            async def handle(job: awa.Job[Any]) -> None:
                seen.append(job.args)

            await client.start([("default", 1)])
            job = await client.insert(given)
            assert (await reaches(client, job.id, S.COMPLETED)).attempt == 1
            await client.shutdown()
            assert seen == [given]

    run(story)


def test_a_strict_models_datetimes_uuids_and_decimals_come_back_from_their_json(
    backend: Backend,
) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        seen: list[StrictOrder] = []

        @client.task(StrictOrder)
        async def strict_order(job: awa.Job[StrictOrder]) -> None:
            seen.append(job.args)

        given = StrictOrder(placed_at=PLACED_AT, ref=UUID(int=1), total=Decimal("0.10"))
        await client.start([("default", 1)])
        job = await client.insert(given)
        assert (await reaches(client, job.id, S.COMPLETED)).attempt == 1
        await client.shutdown()
        assert seen == [given]

    run(story)


@pytest.mark.parametrize(("case", "args", "says"), LOSSY, ids=[case for case, _, _ in LOSSY])
def test_args_whose_json_would_not_give_the_model_back_are_refused_at_insert(
    case: str, args: Any, says: str
) -> None:
    with awa.Client(store=MemoryStore()) as client:
        with pytest.raises(awa.ValidationError) as refused:
            client.insert(args)
        assert client.store.count_jobs() == 0
    message = str(refused.value)
    assert message.startswith(f"cannot store {type(args).__name__} as job args: ")
    assert says in message
    assert "\n" not in message


def test_a_secret_is_refused_with_why_and_what_to_pass_instead_and_is_never_echoed() -> None:
    with awa.Client(store=MemoryStore()) as client, pytest.raises(awa.ValidationError) as refused:
        client.insert(Login(user="ada", password=SecretStr("hunter2")))
    message = str(refused.value)
    assert "the jobs table, its dumps or the dashboard" in message
    assert "pass a reference to the secret" in message
    assert "hunter2" not in message


def test_a_secret_the_model_itself_writes_out_is_stored_and_reaches_the_handler() -> None:
    class Revealed(BaseModel):
        password: SecretStr

        @field_serializer("password", when_used="json")
        def _reveal(self, password: SecretStr) -> str:
            return password.get_secret_value()

    with awa.Client(store=MemoryStore()) as client:
        job = client.insert(Revealed(password=SecretStr("hunter2")))
    assert job.args == {"password": "hunter2"}


def test_a_dict_of_args_is_read_by_field_name_or_by_alias() -> None:
    async def story() -> None:
        async with awa.AsyncClient(store=MemoryStore()) as client:
            seen: list[Order] = []

            @client.task(Order)
            async def order(job: awa.Job[Order]) -> None:
                seen.append(job.args)

            by_name = _order().model_dump(mode="json")
            renamed = {"user_id": "userId", "note": "noteIn"}
            by_alias = {renamed.get(key, key): value for key, value in by_name.items()}
            await client.start([("default", 1)])
            for args in (by_name, by_alias):
                job = await client.insert(args, kind="order")
                assert (await reaches(client, job.id, S.COMPLETED)).attempt == 1
            await client.shutdown()
            assert seen == [_order(), _order()]

    run(story)


# -- every insert path refuses the same way -----------------------------------------------------

SECRET = Login(user="ada", password=SecretStr("hunter2"))
REFUSAL = "cannot store Login as job args: password holds a secret"


def test_insert_many_refuses_the_batch_naming_the_items_position() -> None:
    with awa.Client(store=MemoryStore()) as client:
        with pytest.raises(awa.ValidationError, match=f"^item 1: {REFUSAL}"):
            client.insert_many([Login(user="bo", password=SecretStr("")), SECRET])
        with pytest.raises(awa.ValidationError, match=f"^item 2: {REFUSAL}"):
            client.insert_many([awa.InsertSpec(args=_order()), _order(), SECRET])
        assert client.store.count_jobs() == 0


@dataclass
class LoginEnvelope:
    login: Login


def test_a_model_inside_a_dict_or_a_dataclass_is_held_to_the_same_law() -> None:
    with awa.Client(store=MemoryStore()) as client:
        with pytest.raises(awa.ValidationError, match=REFUSAL):
            client.insert({"login": SECRET}, kind="wrapped")
        with pytest.raises(awa.ValidationError, match=REFUSAL):
            client.insert(LoginEnvelope(SECRET))
        assert client.store.count_jobs() == 0


def test_a_periodic_job_with_such_args_is_refused_when_registered() -> None:
    async def story() -> None:
        async with awa.AsyncClient(store=MemoryStore()) as client:

            @client.task(Login)
            async def login(job: awa.Job[Login]) -> None: ...

            with pytest.raises(awa.ValidationError, match=REFUSAL):
                client.periodic("nightly-login", "0 3 * * *", SECRET)
            await client.start([("default", 1)])
            assert await client.list_periodic() == []
            await client.shutdown()

    run(story)


@pytest.mark.postgres
def test_a_streamed_insert_refuses_such_args_in_a_later_chunk_and_writes_nothing(
    pg_clean_url: str,
) -> None:
    items = [Login(user=str(n), password=SecretStr("")) for n in range(1_000)]
    items[750] = SECRET
    with awa.Client(pg_clean_url) as client:
        assert client._requests.streamable(items)
        with pytest.raises(awa.ValidationError, match=f"^item 750: {REFUSAL}"):
            client.insert_many(items)
        assert client.store.count_jobs() == 0


@pytest.mark.postgres
def test_an_insert_on_the_callers_connection_refuses_before_anything_is_sent(
    pg_clean_url: str,
) -> None:
    with awa.Client(pg_clean_url) as client, psycopg.connect(pg_clean_url) as conn:
        conn.execute("CREATE TEMP TABLE mine (n int)")
        conn.execute("INSERT INTO mine VALUES (1)")
        with pytest.raises(awa.ValidationError, match=REFUSAL):
            client.insert(SECRET, conn=conn)
        assert conn.execute("SELECT n FROM mine").fetchall() == [(1,)]  # the transaction goes on
        conn.commit()
        assert client.store.count_jobs() == 0


# -- through a client opened on a URL -----------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{request.getfixturevalue('tmp_path') / 'jobs.db'}"
    return str(request.getfixturevalue("pg_clean_url"))


def test_a_client_on_a_store_url_round_trips_a_model_and_refuses_a_lossy_one(
    store_url: str,
) -> None:
    async def story() -> None:
        async with awa.AsyncClient(store_url) as client:
            await client.migrate()
            seen: list[Order] = []

            @client.task(Order)
            async def order(job: awa.Job[Order]) -> None:
                seen.append(job.args)

            with pytest.raises(awa.ValidationError, match=REFUSAL):
                await client.insert(SECRET)
            await client.start([("default", 1)], poll_interval=0.05)
            job = await client.insert(_order())
            assert (await reaches(client, job.id, S.COMPLETED)).attempt == 1
            await client.shutdown()
            assert seen == [_order()]
            assert [j.id for j in await client.list_jobs()] == [job.id]

    asyncio.run(story())
