"""Example agent tools: the seven tools structgen's default model is trained to call.

Run from a checkout (``examples/`` is not a package; load it by path)::

    from structgen.agent import load_tools
    TOOLS = load_tools("examples/tools.py")
    call = sg.Generator(sg.load_model()).tool_call("What's the weather in Oslo?", TOOLS)

Argument models are pydantic classes whose ``Field`` constraints become the JSON Schema the automaton
enforces. Emails are lower-case strings with ``format: email`` and a pattern (``email-validator`` is not a
dependency); ``at`` is an RFC 3339 date-time with its offset, written as a pattern so the automaton cannot
leave the offset out. Arguments with defaults are optional: a request that does not state them leaves them
out and the defaults apply. Two field validators say what a schema cannot: a flight goes to another
airport, a conversion to another currency; the generator repairs a call that breaks them as it repairs a
schema error (``structgen.validators.ToolCallValidator``).
"""

import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from structgen.agent import Tool

EMAIL_PATTERN = r"^[a-z0-9._%+-]+@[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,}$"
IATA_PATTERN = r"^[A-Z]{3}$"
CURRENCY_PATTERN = r"^[A-Z]{3}$"
TIME_PATTERN = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
DATE_TIME_PATTERN = (r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
                     r"(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$")

Email = Annotated[str, Field(pattern=EMAIL_PATTERN, json_schema_extra={"format": "email"})]


def _differs_from(other: str, what: str):
    """A field validator (for ``field_validator``): the field must hold ``what`` than field ``other``."""
    def check(cls, value, info: ValidationInfo):
        if value == info.data.get(other):
            raise ValueError(f"{info.field_name} must be {what} than {other} ({value})")
        return value
    return classmethod(check)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GetWeather(_Args):
    city: str = Field(min_length=1, max_length=40)
    unit: Literal["celsius", "fahrenheit"] = "celsius"
    days: int = Field(1, ge=1, le=14)


class CreateEvent(_Args):
    title: str = Field(max_length=60)
    date: datetime.date
    start_time: str = Field(pattern=TIME_PATTERN)
    duration_minutes: int = Field(30, ge=5, le=480)
    attendees: list[Email] = Field([], max_length=8)


class SendEmail(_Args):
    to: list[Email] = Field(min_length=1, max_length=5)
    subject: str = Field(max_length=80)
    body: str = Field(max_length=400)


class SearchFlights(_Args):
    origin: str = Field(pattern=IATA_PATTERN)
    destination: str = Field(pattern=IATA_PATTERN)
    date: datetime.date
    passengers: int = Field(1, ge=1, le=9)
    cabin: Literal["economy", "premium_economy", "business", "first"] = "economy"

    _another_airport = field_validator("destination")(_differs_from("origin", "another airport"))


class SetReminder(_Args):
    text: str = Field(max_length=100)
    at: datetime.datetime = Field(json_schema_extra={"pattern": DATE_TIME_PATTERN})


class ConvertCurrency(_Args):
    amount: float = Field(gt=0)
    from_currency: str = Field(pattern=CURRENCY_PATTERN)
    to_currency: str = Field(pattern=CURRENCY_PATTERN)

    _another_currency = field_validator("to_currency")(_differs_from("from_currency", "another currency"))


class DeleteFile(_Args):
    path: str = Field(max_length=200)


TOOLS = [
    Tool("get_weather", "Current weather and forecast for a city.", GetWeather),
    Tool("create_event", "Create a calendar event.", CreateEvent),
    Tool("send_email", "Send an email.", SendEmail, side_effects=True),
    Tool("search_flights", "Search flights between two airports on a date.", SearchFlights),
    Tool("set_reminder", "Set a reminder at a date and time.", SetReminder),
    Tool("convert_currency", "Convert an amount of money from one currency to another.", ConvertCurrency),
    Tool("delete_file", "Delete a file.", DeleteFile, destructive=True),
]
